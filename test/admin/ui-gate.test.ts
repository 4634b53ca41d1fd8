import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { status } from '@grpc/grpc-js';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { temporal } from '@temporalio/proto';
import { getStack, ownTemporal } from '../helpers/stack';
import { createDataSource } from '../../src/db/data-source';
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

  /** An ID token as the identity provider signs it (its subject: the provider's id for the person). */
  const token = (email: string | undefined, groups: string[], { key = privateKey, aud = AUDIENCE, iss = issuer, exp = '5m' as string | number, claims = {} as Record<string, unknown> } = {}) =>
    new SignJWT({ ...(email ? { email } : {}), groups, ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(iss)
      .setAudience(aud)
      .setSubject(`id-${email ?? 'nobody'}`)
      .setIssuedAt()
      .setExpirationTime(exp)
      .sign(key);
  const ALICE = 'alice@example.test (sub id-alice@example.test)';
  const BOB = 'bob@example.test (sub id-bob@example.test)';

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
        [ALICE, 'temporal TerminateWorkflowExecution', 'succeeded'],
        [ALICE, 'temporal SignalWorkflowExecution', 'succeeded'],
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
        [BOB, 'temporal UpdateWorkflowExecution', 'refused'],
        [BOB, 'temporal SignalWorkflowExecution', 'refused'],
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
    const turnedAway = [
      await token('alice@example.test', [GROUP], { key: (await generateKeyPair('ES256')).privateKey }), // forged
      await token('alice@example.test', [GROUP], { aud: 'another-app' }), // for another application
      await token('alice@example.test', [GROUP], { iss: 'https://elsewhere.example' }), // another provider
      await token('alice@example.test', [GROUP], { exp: Math.floor(Date.now() / 1000) - 600 }), // expired
      await token(undefined, [GROUP]), // names no one
      await token('alice@example.test', [GROUP], { claims: { email_verified: false } }), // an email nobody checked
    ];
    for (const bearer of turnedAway) {
      const caller = await asUi(bearer);
      assert.equal(await codeOf(caller.workflow.getHandle(workflowId).signal('liveAccessDecided', { approved: true })), status.UNAUTHENTICATED);
    }
    assert.deepEqual(await signalsOf(workflowId), []);
    const acts = await auditOf(workflowId);
    assert.equal(acts.length, 1 + turnedAway.length);
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
    assert.equal(update.operator, ALICE);
    assert.equal(update.outcome, 'refused');
    assert.ok(update.error, 'with the reason');
  });

  it('a write whose record cannot be written is refused, never passed on unrecorded', async function () {
    this.timeout(60_000);
    const workflowId = await probe();
    const broken = createDataSource(getStack().databaseUrl);
    await broken.initialize();
    await broken.destroy(); // every insert now fails, as with Postgres down
    const blind = new TemporalUiGate({ upstream: getStack().env.address, dataSource: broken, oidcIssuer: issuer, oidcAudience: AUDIENCE, operatorGroup: GROUP, groupsClaim: 'groups' });
    const port = await blind.listen('127.0.0.1', 0);
    try {
      // No retrying interceptor: the SDK would retry UNAVAILABLE for a while (as the UI may).
      const connection = Connection.lazy({ address: `127.0.0.1:${port}`, metadata: { authorization: `Bearer ${await token('alice@example.test', [GROUP])}` }, interceptors: [] });
      connections.push(connection);
      const alice = new Client({ connection, namespace: 'default' });
      assert.equal((await alice.workflow.getHandle(workflowId).describe()).workflowId, workflowId, 'reads need no record');
      assert.equal(await codeOf(alice.workflow.getHandle(workflowId).signal('liveAccessDecided', { approved: true })), status.UNAVAILABLE);
      assert.deepEqual(await signalsOf(workflowId), [], 'the signal never reached the run');
    } finally {
      await blind.close();
    }
  });

  it('arguments Postgres cannot store as they are (a NUL, half of an emoji) are recorded mended, not refused for ever', async function () {
    this.timeout(60_000);
    const workflowId = await probe();
    const alice = await asUi(await token('alice@example.test', [GROUP]));
    const note = `nul\u0000 and half an emoji \ud83d, then ${'é'.repeat(9_000)}`;
    await alice.workflow.getHandle(workflowId).signal('liveAccessDecided', { approved: false, note });
    assert.deepEqual((await signalsOf(workflowId)).map((x) => x.name), ['liveAccessDecided']);
    const [act] = await auditOf(workflowId);
    assert.equal(act.outcome, 'succeeded');
    assert.equal((act.arguments as { truncated?: boolean }).truncated, true, 'a long argument is cut, at a whole character');
  });

  it('a worker\'s calls never pass the gate, whoever asks', async function () {
    this.timeout(30_000);
    const alice = await asUi(await token('alice@example.test', [GROUP]));
    const poll = alice.workflowService.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: 'partner-api' } });
    assert.equal(await codeOf(poll), status.PERMISSION_DENIED);
  });

  it('sorts every call of Temporal\'s services into read, write or worker: the reads are exactly these (a new method is a write until someone looks)', () => {
    const methodsOf = (service: unknown) => Object.keys((service as { methods: Record<string, unknown> }).methods);
    const all = [...methodsOf(temporal.api.workflowservice.v1.WorkflowService), ...methodsOf(temporal.api.operatorservice.v1.OperatorService)];
    // Read one by one in the protos (@temporalio/proto 1.24): each changes nothing.
    const READS = [
      'CountActivityExecutions', 'CountNexusOperationExecutions', 'CountSchedules', 'CountWorkers', 'CountWorkflowExecutions',
      'DescribeActivityExecution', 'DescribeBatchOperation', 'DescribeDeployment', 'DescribeNamespace', 'DescribeNexusOperationExecution', 'DescribeSchedule',
      'DescribeTaskQueue', 'DescribeWorker', 'DescribeWorkerDeployment', 'DescribeWorkerDeploymentVersion', 'DescribeWorkflowExecution', 'DescribeWorkflowRule',
      'GetClusterInfo', 'GetCurrentDeployment', 'GetDeploymentReachability', 'GetNexusEndpoint', 'GetSearchAttributes', 'GetSystemInfo',
      'GetWorkerBuildIdCompatibility', 'GetWorkerTaskReachability', 'GetWorkerVersioningRules', 'GetWorkflowExecutionHistory', 'GetWorkflowExecutionHistoryReverse',
      'ListActivityExecutions', 'ListArchivedWorkflowExecutions', 'ListBatchOperations', 'ListClosedWorkflowExecutions', 'ListClusters', 'ListDeployments',
      'ListNamespaces', 'ListNexusEndpoints', 'ListNexusOperationExecutions', 'ListOpenWorkflowExecutions', 'ListScheduleMatchingTimes', 'ListSchedules',
      'ListSearchAttributes', 'ListTaskQueuePartitions', 'ListWorkerDeployments', 'ListWorkers', 'ListWorkflowExecutions', 'ListWorkflowRules',
      'PollActivityExecution', 'PollNexusOperationExecution', 'PollWorkflowExecutionUpdate', 'QueryWorkflow', 'ScanWorkflowExecutions',
      'ValidateWorkerDeploymentVersionComputeConfig',
    ];
    assert.deepEqual(all.filter((m) => accessOf(m) === 'read').sort(), [...READS].sort());
    for (const write of ['SignalWorkflowExecution', 'UpdateWorkflowExecution', 'TerminateWorkflowExecution', 'ResetWorkflowExecution', 'StartBatchOperation', 'AddSearchAttributes', 'DeleteNamespace', 'SomeMethodOfTomorrow']) {
      assert.equal(accessOf(write), 'write', write);
    }
    for (const worker of ['PollWorkflowTaskQueue', 'RespondWorkflowTaskCompleted', 'RespondActivityTaskCompletedById', 'RecordActivityTaskHeartbeat', 'PollNexusTaskQueue']) assert.equal(accessOf(worker), 'worker', worker);
  });
});
