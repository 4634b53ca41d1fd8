import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { status } from '@grpc/grpc-js';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { temporal } from '@temporalio/proto';
import { getStack, ownTemporal } from '../helpers/stack';
import { adminWith } from '../helpers/admin';
import { listenOnLoopback } from '../../src/main/loopback';
import { TemporalUiGate, accessOf } from '../../src/temporal/ui-gate';

const AUDIENCE = 'temporal-ui';
const GROUP = 'partner-api-operators';

/**
 * The Temporal UI reaches Temporal only through the operators' gate: what a signed-in operator
 * changes there (a signal, an Update, a terminate…) is in the audit trail with the operator's
 * email from the identity provider's token, and only the operators' group may change anything.
 * Here a Temporal client stands in for the UI's server (it sends the same gRPC calls with the
 * same bearer token), and a small OIDC issuer on loopback signs the tokens.
 */
describe('the Temporal UI gate: UI writes are audited and need the operators\' group', function () {
  ownTemporal();
  let issuerServer: http.Server;
  let issuer: string;
  let privateKey: CryptoKey;
  let gate: TemporalUiGate;
  let gateAddress: string;
  const connections: Connection[] = [];

  before(async function () {
    this.timeout(30_000);
    const pair = await generateKeyPair('ES256');
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    issuerServer = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/.well-known/openid-configuration') res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/keys` }));
      else if (req.url === '/keys') res.end(JSON.stringify({ keys: [jwk] }));
      else res.writeHead(404).end('{}');
    });
    issuer = (await listenOnLoopback(issuerServer)).url;
    gate = new TemporalUiGate({ upstream: getStack().env.address, dataSource: getStack().dataSource, oidcIssuer: issuer, oidcAudience: AUDIENCE, operatorGroup: GROUP, groupsClaim: 'groups' });
    gateAddress = `127.0.0.1:${await gate.listen('127.0.0.1', 0)}`;
  });

  after(async () => {
    for (const c of connections) await c.close();
    await gate?.close();
    issuerServer?.close();
  });

  const token = (email: string, groups: string[], key: CryptoKey = privateKey, aud = AUDIENCE) =>
    new SignJWT({ email, groups }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(issuer).setAudience(aud).setSubject(email).setIssuedAt().setExpirationTime('5m').sign(key);

  /** A client that talks to Temporal as the UI does: through the gate, with the sign-in's token. */
  async function asUi(bearer: string | null, identity = 'someone@ui'): Promise<Client> {
    // Lazy: a caller the gate turns away fails at its first call, not at connecting.
    const connection = Connection.lazy({ address: gateAddress, metadata: bearer ? { authorization: `Bearer ${bearer}` } : {} });
    connections.push(connection);
    return new Client({ connection, namespace: 'default', identity });
  }

  /** A run no worker serves: signals and terminates need none. */
  async function probe(): Promise<string> {
    const workflowId = `ui-gate-${randomUUID()}`;
    await getStack().env.client.workflow.start('uiGateProbe', { workflowId, taskQueue: `ui-gate-nobody-${randomUUID()}`, args: [] });
    return workflowId;
  }

  async function signalsOf(workflowId: string): Promise<Array<{ name: string; identity: string }>> {
    const history = await getStack().env.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).map((e) => ({ name: e.workflowExecutionSignaledEventAttributes!.signalName!, identity: e.workflowExecutionSignaledEventAttributes!.identity ?? '' }));
  }

  async function auditOf(workflowId: string) {
    const audit = await adminWith({ TEMPORAL_ADDRESS: '127.0.0.1:1' }, 'audit', '--limit', '50', '--json');
    assert.equal(audit.code, 0, audit.stderr);
    return (JSON.parse(audit.stdout) as Array<{ operator: string; command: string; arguments: Record<string, unknown>; outcome: string; error: string | null }>).filter((a) => JSON.stringify(a.arguments).includes(workflowId));
  }

  /** The gRPC code a call failed with (-1: failed without one), undefined when it passed. */
  const codeOf = async (work: Promise<unknown>): Promise<number | undefined> => {
    try {
      await work;
      return undefined;
    } catch (err) {
      const e = err as { code?: number; cause?: { code?: number } };
      return e.code ?? e.cause?.code ?? -1;
    }
  };

  it('an operator\'s signal and terminate pass and are recorded with the email the identity provider signed, their arguments decoded', async function () {
    this.timeout(60_000);
    const workflowId = await probe();
    const alice = await asUi(await token('alice@example.test', ['everyone', GROUP]), 'claims-to-be-root');
    await alice.workflow.getHandle(workflowId).signal('liveAccessDecided', { approved: true, note: 'checked the documents' });
    await alice.workflow.getHandle(workflowId).terminate('stuck, said the partner');
    assert.deepEqual(await signalsOf(workflowId), [{ name: 'liveAccessDecided', identity: 'claims-to-be-root' }]);

    const acts = await auditOf(workflowId);
    assert.deepEqual(
      acts.map((a) => [a.operator, a.command, a.outcome]),
      [
        ['alice@example.test', 'temporal TerminateWorkflowExecution', 'succeeded'],
        ['alice@example.test', 'temporal SignalWorkflowExecution', 'succeeded'],
      ],
      'the operator is the token\'s email, not the identity the caller claims',
    );
    const signal = acts[1].arguments as { signalName: string; input: unknown[]; workflowExecution: { workflowId: string } };
    assert.equal(signal.signalName, 'liveAccessDecided');
    assert.deepEqual(signal.input, [{ approved: true, note: 'checked the documents' }]);
    assert.equal(signal.workflowExecution.workflowId, workflowId);
    assert.equal((acts[0].arguments as { reason: string }).reason, 'stuck, said the partner');
  });

  it('someone signed in but not in the group may read, and a write of theirs is refused before Temporal sees it, and recorded', async function () {
    this.timeout(60_000);
    const workflowId = await probe();
    const bob = await asUi(await token('bob@example.test', ['everyone']));
    const described = await bob.workflow.getHandle(workflowId).describe();
    assert.equal(described.workflowId, workflowId, 'a read passes');
    assert.equal(await codeOf(bob.workflow.getHandle(workflowId).signal('checkoutPaid')), status.PERMISSION_DENIED);
    assert.equal(await codeOf(bob.workflow.getHandle(workflowId).executeUpdate('refund', { args: [{ amount: 1 }] })), status.PERMISSION_DENIED);
    assert.deepEqual(await signalsOf(workflowId), [], 'no signal reached the run');
    const acts = await auditOf(workflowId);
    assert.deepEqual(
      acts.map((a) => [a.operator, a.command, a.outcome]),
      [
        ['bob@example.test', 'temporal UpdateWorkflowExecution', 'refused'],
        ['bob@example.test', 'temporal SignalWorkflowExecution', 'refused'],
      ],
      'reads are not recorded; refusals are',
    );
    assert.match(acts[1].error ?? '', new RegExp(GROUP));
  });

  it('without a token, or with one the identity provider did not sign for the UI, nothing passes, not even a read', async function () {
    this.timeout(60_000);
    const workflowId = await probe();
    const nobody = await asUi(null, 'alice@example.test');
    assert.equal(await codeOf(nobody.workflow.getHandle(workflowId).describe()), status.UNAUTHENTICATED);
    assert.equal(await codeOf(nobody.workflow.getHandle(workflowId).signal('liveAccessDecided', { approved: true })), status.UNAUTHENTICATED);
    const forger = await asUi(await token('alice@example.test', [GROUP], (await generateKeyPair('ES256')).privateKey));
    assert.equal(await codeOf(forger.workflow.getHandle(workflowId).signal('liveAccessDecided', { approved: true })), status.UNAUTHENTICATED);
    const otherApp = await asUi(await token('alice@example.test', [GROUP], privateKey, 'another-app'));
    assert.equal(await codeOf(otherApp.workflow.getHandle(workflowId).signal('liveAccessDecided', { approved: true })), status.UNAUTHENTICATED);
    assert.deepEqual(await signalsOf(workflowId), []);
    const acts = await auditOf(workflowId);
    assert.equal(acts.length, 3);
    assert.ok(acts.every((a) => a.outcome === 'refused' && a.operator.startsWith('unverified')), JSON.stringify(acts));
  });

  it('an Update Temporal refuses is recorded as refused, with Temporal\'s reason', async function () {
    this.timeout(60_000);
    const workflowId = await probe();
    await getStack().env.client.workflow.getHandle(workflowId).terminate('done');
    const alice = await asUi(await token('alice@example.test', [GROUP]));
    assert.notEqual(await codeOf(alice.workflow.getHandle(workflowId).executeUpdate('recordTransferOutcome', { args: [{ outcome: 'completed' }] })), undefined);
    const [update] = await auditOf(workflowId);
    assert.equal(update.command, 'temporal UpdateWorkflowExecution');
    assert.equal(update.operator, 'alice@example.test');
    assert.equal(update.outcome, 'refused');
    assert.ok(update.error, 'with the reason');
  });

  it('a worker\'s calls never pass the gate, whoever asks', async function () {
    this.timeout(30_000);
    const alice = await asUi(await token('alice@example.test', [GROUP]));
    const poll = alice.workflowService.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: 'partner-api' } });
    assert.equal(await codeOf(poll), status.PERMISSION_DENIED);
  });

  it('sorts every call of Temporal\'s services into read, write or worker, and none that changes a run is a read', () => {
    const methods = Object.keys((temporal.api.workflowservice.v1.WorkflowService as unknown as { methods: Record<string, unknown> }).methods);
    const reads = methods.filter((m) => accessOf(m) === 'read');
    for (const write of ['SignalWorkflowExecution', 'SignalWithStartWorkflowExecution', 'UpdateWorkflowExecution', 'TerminateWorkflowExecution', 'RequestCancelWorkflowExecution', 'ResetWorkflowExecution', 'StartBatchOperation', 'DeleteWorkflowExecution', 'StartWorkflowExecution', 'SetWorkerDeploymentCurrentVersion', 'PauseWorkflowExecution', 'UpdateWorkflowExecutionOptions', 'PatchSchedule', 'ExecuteMultiOperation']) {
      assert.equal(accessOf(write), 'write', write);
    }
    for (const worker of ['PollWorkflowTaskQueue', 'RespondWorkflowTaskCompleted', 'RespondActivityTaskCompletedById', 'RecordActivityTaskHeartbeat', 'PollNexusTaskQueue']) assert.equal(accessOf(worker), 'worker', worker);
    assert.ok(reads.includes('QueryWorkflow') && reads.includes('DescribeWorkflowExecution') && reads.includes('PollWorkflowExecutionUpdate'));
    assert.ok(reads.every((m) => /^(Describe|Get|List|Count|Scan|Query|Validate|Poll)/.test(m)), reads.join(' '));
  });
});
