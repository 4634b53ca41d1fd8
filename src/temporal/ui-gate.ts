/**
 * The operators' gate in front of Temporal for the Temporal UI (issue 63 §4): the UI talks gRPC to
 * this process, never to Temporal itself. It passes every call through unchanged, and:
 *
 * - knows who calls: the bearer token the UI forwards (its sign-in's ID token, with
 *   TEMPORAL_AUTH_USE_ID_TOKEN_AS_BEARER) is verified against the identity provider's keys
 *   (OIDC discovery at TEMPORAL_UI_OIDC_ISSUER, audience TEMPORAL_UI_OIDC_AUDIENCE); the operator
 *   is its `email`. Without an issuer (development only) the operator is the identity the UI sent.
 * - lets anyone signed in read, and only members of TEMPORAL_UI_OPERATOR_GROUP (the token's
 *   TEMPORAL_UI_GROUPS_CLAIM) write: a signal, an Update, a cancel, terminate or reset, a batch, a
 *   schedule or deployment change… Worker calls (polls, task completions) never pass.
 * - records every write in `operator_actions` before it is forwarded (`temporal <Method>`, with
 *   the workflow, the signal's or Update's name and its arguments decoded), and its outcome after:
 *   succeeded, refused (by the gate or by Temporal, with the reason) or failed. A write whose
 *   record cannot be written is not forwarded.
 */
import * as grpc from '@grpc/grpc-js';
import { temporal } from '@temporalio/proto';
import { defaultPayloadConverter } from '@temporalio/common';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { DataSource } from 'typeorm';
import type { Service, Type } from 'protobufjs';
import { BREAKDOWN_GRPC_CODES, recordAttempt, recordOutcome, storable, type Attempt } from '../admin/audit';
import type { Logger } from 'pino';

export interface UiGateOptions {
  /** Temporal's frontend (host:port). */
  upstream: string;
  dataSource: DataSource;
  /** OIDC issuer of the UI's sign-in; unset only in development (then nobody is verified). */
  oidcIssuer?: string;
  /** The ID token's audience: the UI's client id at the identity provider. */
  oidcAudience?: string;
  /** Members of this group may write. */
  operatorGroup: string;
  /** The token claim that lists the user's groups. */
  groupsClaim: string;
  logger?: Pick<Logger, 'warn' | 'error'>;
}

type Access = 'read' | 'write' | 'worker';

/** Calls a worker makes (and nothing else should): never through the operators' gate. */
const WORKER_CALLS = /^(Poll(WorkflowTask|ActivityTask|NexusTask)Queue|Respond\w+|RecordActivityTaskHeartbeat\w*|RecordWorkerHeartbeat|ShutdownWorker|ResetStickyTaskQueue|FetchWorkerConfig)$/;
/** Calls that change nothing: reads, queries, and polls for a result already asked for. */
const READS = /^(Describe|Get|List|Count|Scan|Query|Validate)\w*$|^Poll(WorkflowExecutionUpdate|ActivityExecution|NexusOperationExecution)$/;

export function accessOf(method: string): Access {
  if (WORKER_CALLS.test(method)) return 'worker';
  return READS.test(method) ? 'read' : 'write';
}

interface Caller {
  operator: string;
  groups: string[];
}

class Refusal extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

/** Temporal's answers that mean "not done, and why" rather than a breakdown. */
const REFUSED_CODES = new Set([grpc.status.INVALID_ARGUMENT, grpc.status.NOT_FOUND, grpc.status.ALREADY_EXISTS, grpc.status.PERMISSION_DENIED, grpc.status.FAILED_PRECONDITION, grpc.status.OUT_OF_RANGE, grpc.status.UNAUTHENTICATED, grpc.status.RESOURCE_EXHAUSTED]);

const passBytes = (b: Buffer) => b;

/** The largest record of a call's arguments kept (a signal's input can be large). */
const MAX_RECORDED_CHARS = 8_000;
/** Temporal's own clients allow messages this large (a history page, a big payload). */
const MAX_MESSAGE_BYTES = 128 * 1024 * 1024;
/** The identity providers' signing algorithms taken (asymmetric only: no shared secret is ever a key here). */
const TOKEN_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** Metadata never passed on to Temporal: the operator's token is the gate's business. */
const NOT_FORWARDED = ['authorization', 'authorization-extras'];

export class TemporalUiGate {
  private readonly server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES, 'grpc.max_send_message_length': MAX_MESSAGE_BYTES });
  private readonly upstream: grpc.Client;
  private discovered?: Promise<Parameters<typeof jwtVerify>[1]>;

  constructor(private readonly options: UiGateOptions) {
    if (Boolean(options.oidcIssuer) !== Boolean(options.oidcAudience)) throw new Error('the UI sign-in needs both its issuer and its audience (TEMPORAL_UI_OIDC_ISSUER, TEMPORAL_UI_OIDC_AUDIENCE), or neither (development)');
    this.upstream = new grpc.Client(options.upstream, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES, 'grpc.max_send_message_length': MAX_MESSAGE_BYTES });
    // At run time the proto package's services are reflection objects (its types say classes).
    const services = [temporal.api.workflowservice.v1.WorkflowService, temporal.api.operatorservice.v1.OperatorService] as unknown as Service[];
    for (const service of services) {
      const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
      const handlers: grpc.UntypedServiceImplementation = {};
      for (const method of Object.values(service.methods)) {
        const path = `/${service.fullName.replace(/^\./, '')}/${method.name}`;
        const requestType = (method.resolve() as typeof method).resolvedRequestType!;
        definition[method.name] = {
          path,
          requestStream: false,
          responseStream: false,
          requestSerialize: passBytes,
          requestDeserialize: passBytes,
          responseSerialize: passBytes,
          responseDeserialize: passBytes,
        };
        handlers[method.name] = (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
          this.handle(method.name, path, requestType, call).then(
            (response) => callback(null, response),
            (err: grpc.ServiceError | Refusal) => {
              if (err instanceof Refusal || typeof (err as grpc.ServiceError).code === 'number') {
                callback({ code: err.code, details: err instanceof Refusal ? err.message : err.details, metadata: (err as grpc.ServiceError).metadata });
              } else {
                this.options.logger?.error({ err, method: method.name }, 'temporal UI gate: a call failed inside the gate');
                callback({ code: grpc.status.INTERNAL, details: 'the operators\' gate failed on this call (see its log)' });
              }
            },
          );
        };
      }
      this.server.addService(definition as grpc.ServiceDefinition, handlers);
    }
  }

  /** Listens on host:port (port 0: any free one); resolves to the port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => this.server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))));
  }

  /** Stops taking calls, lets those under way finish for up to `graceMs`, then ends the rest. */
  async close(graceMs = 5_000): Promise<void> {
    const forced = setTimeout(() => this.server.forceShutdown(), graceMs);
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    clearTimeout(forced);
    this.upstream.close();
  }

  private async handle(method: string, path: string, requestType: Type, call: grpc.ServerUnaryCall<Buffer, Buffer>): Promise<Buffer> {
    const access = accessOf(method);
    if (access === 'worker') throw new Refusal(grpc.status.PERMISSION_DENIED, `${method} is a worker's call: workers connect to Temporal directly, never through the operators' gate`);
    const request = call.request;
    const claimedIdentity = () => String((requestType.decode(request) as { identity?: string }).identity || '');
    if (access === 'read') {
      await this.caller(call.metadata, claimedIdentity);
      return this.forward(path, request, call);
    }
    const described = describeCall(method, requestType, request);
    const refuse = async (operator: string, refusal: Refusal): Promise<never> => {
      const attempt = await this.record(method, described, operator);
      await recordOutcome(this.options.dataSource, attempt, 'refused', refusal.message).catch(() => undefined);
      throw refusal;
    };
    let caller: Caller;
    try {
      caller = await this.caller(call.metadata, () => String(described.identity ?? ''));
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      return refuse(`unverified (claimed ${JSON.stringify(String(described.identity ?? '').slice(0, 200))})`, err);
    }
    if (!caller.groups.includes(this.options.operatorGroup)) {
      return refuse(caller.operator, new Refusal(grpc.status.PERMISSION_DENIED, `${caller.operator} may read, not change: writes from the Temporal UI need the group ${this.options.operatorGroup}`));
    }
    const attempt = await this.record(method, described, caller.operator);
    try {
      const response = await this.forward(path, request, call);
      await this.outcome(attempt, 'succeeded');
      return response;
    } catch (err) {
      const e = err as grpc.ServiceError;
      const why = `${grpc.status[e.code] ?? e.code}: ${e.details ?? e.message}`;
      if (REFUSED_CODES.has(e.code)) await this.outcome(attempt, 'refused', why);
      else await this.outcome(attempt, 'failed', BREAKDOWN_GRPC_CODES.has(e.code) ? `${why} (whether Temporal applied it is unknown: look at the workflow's history)` : why);
      throw err;
    }
  }

  private async record(method: string, described: Record<string, unknown>, operator: string) {
    try {
      return await recordAttempt(this.options.dataSource, `temporal ${method}`, described, operator);
    } catch (err) {
      this.options.logger?.error({ err, method }, 'temporal UI gate: the audit trail could not be written; the call was refused');
      throw new Refusal(grpc.status.UNAVAILABLE, 'the audit trail cannot be written just now, so nothing was done: try again');
    }
  }

  private async outcome(attempt: Attempt, outcome: 'succeeded' | 'refused' | 'failed', why?: string): Promise<void> {
    // The act is done (or refused) either way; a lost outcome row shows as `unfinished`.
    await recordOutcome(this.options.dataSource, attempt, outcome, why).catch((err: unknown) =>
      this.options.logger?.warn({ err, attempt: attempt.id, outcome }, 'temporal UI gate: an outcome could not be recorded (admin audit shows it unfinished)'),
    );
  }

  private forward(path: string, request: Buffer, call: grpc.ServerUnaryCall<Buffer, Buffer>): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const metadata = call.metadata.clone();
      for (const key of NOT_FORWARDED) metadata.remove(key);
      // The UI's deadline, and its cancellation (a long-poll it gives up), go on to Temporal.
      this.upstream.makeUnaryRequest(path, passBytes, passBytes, request, metadata, { deadline: call.getDeadline(), parent: call }, (err, response) => (err ? reject(err) : resolve(response!)));
    });
  }

  /** Who calls: the verified token's email and groups; without an issuer (development), the identity the UI sent, in every group. */
  private async caller(metadata: grpc.Metadata, claimedIdentity: () => string): Promise<Caller> {
    if (!this.options.oidcIssuer) return { operator: claimedIdentity() || 'unnamed (Temporal UI without sign-in)', groups: [this.options.operatorGroup] };
    const bearer = String(metadata.get('authorization')[0] ?? '').replace(/^Bearer\s+/i, '');
    if (!bearer) throw new Refusal(grpc.status.UNAUTHENTICATED, 'sign in to the Temporal UI: this call carries no token');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(bearer, await this.verificationKeys(), {
        issuer: this.options.oidcIssuer,
        audience: this.options.oidcAudience,
        algorithms: TOKEN_ALGORITHMS,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      throw new Refusal(grpc.status.UNAUTHENTICATED, `the token is not one the identity provider signed for the Temporal UI (${(err as Error).message}): sign in again`);
    }
    const email = typeof payload.email === 'string' && payload.email ? payload.email : null;
    if (!email) throw new Refusal(grpc.status.UNAUTHENTICATED, 'the token names no email: ask for the email scope (TEMPORAL_AUTH_SCOPES=openid,profile,email)');
    if (payload.email_verified === false) throw new Refusal(grpc.status.UNAUTHENTICATED, `the identity provider has not verified ${email}: an unverified email names nobody`);
    // The email as people read it, the subject (the provider's id for the person, never reused) beside it.
    const operator = `${email} (sub ${payload.sub})`;
    const groups = payload[this.options.groupsClaim];
    return { operator, groups: Array.isArray(groups) ? groups.map(String) : typeof groups === 'string' ? [groups] : [] };
  }

  private verificationKeys(): Promise<Parameters<typeof jwtVerify>[1]> {
    this.discovered ??= (async () => {
      const issuer = this.options.oidcIssuer!.replace(/\/$/, '');
      const res = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(5_000) });
      if (!res.ok) throw new Error(`OIDC discovery at ${issuer} answered ${res.status}`);
      const { jwks_uri } = (await res.json()) as { jwks_uri: string };
      return createRemoteJWKSet(new URL(jwks_uri), { timeoutDuration: 5_000 });
    })().catch((err: unknown) => {
      this.discovered = undefined;
      throw err;
    });
    return this.discovered;
  }
}

/**
 * What a write is, for the audit trail: the request decoded, payloads (a signal's or Update's
 * arguments, a start's input) turned back into their values, bytes as base64, at most 8,000 characters.
 */
export function describeCall(method: string, requestType: Type, request: Buffer): Record<string, unknown> {
  const message = requestType.decode(request);
  const plain = requestType.toObject(message, { longs: String, enums: String });
  const described = readable(plain) as Record<string, unknown>;
  // The identity a call claims: a signal's own field, an Update's in request.meta.
  const meta = (described.request as { meta?: { identity?: string } } | undefined)?.meta;
  if (!described.identity && meta?.identity) described.identity = meta.identity;
  const text = JSON.stringify(described);
  if (text.length <= MAX_RECORDED_CHARS) return described;
  // Cut at a whole character (never half of a surrogate pair).
  return { method, truncated: true, start: Array.from(text.slice(0, MAX_RECORDED_CHARS + 1)).slice(0, -1).join('') };
}

function readable(value: unknown): unknown {
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (typeof value === 'string') return storable(value);
  if (Array.isArray(value)) return value.map(readable);
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if (Array.isArray(v.payloads) && Object.keys(v).length === 1) return v.payloads.map(payloadValue);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [storable(k), readable(x)]));
  }
  return value;
}

function payloadValue(payload: { metadata?: Record<string, Uint8Array>; data?: Uint8Array }): unknown {
  try {
    return readable(defaultPayloadConverter.fromPayload({ metadata: payload.metadata ?? {}, data: payload.data }));
  } catch {
    return { undecoded: Buffer.from(payload.data ?? []).toString('base64') };
  }
}
