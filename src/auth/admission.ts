/**
 * Admission of signed requests in batches: the requests whose signatures were checked in the
 * same event-loop turn go to Postgres as one statement over arrays (`admit_requests`, which runs
 * the per-request `admit_request` for each in arrival order, inside one transaction), with the
 * route's read (the listing of availability and pricing) made for each admitted request in the
 * same statement.
 *
 * Why (bench/RESULTS.md): per request, the API process paid a Postgres round trip (a socket
 * write that wakes the backend, the driver's per-query work) and Postgres paid a statement and a
 * transaction; with batches both are paid once per batch. Replay protection and the rate limit
 * are unchanged: every decision is still made in Postgres, which every API process shares, and
 * requests of one credential are decided in the order they arrived.
 *
 * At most `maxInFlight` batches are in flight; requests that arrive meanwhile wait for the next
 * one, so a busier process sends fewer, larger batches and an idle one sends each request at once.
 * The next batch is of the kind (read or none) whose oldest request waited longest, so no kind
 * starves. Within a batch, one credential's requests keep their arrival order (the batch is
 * sorted by key id, stably); `admit_requests` first takes an advisory lock per key in a fixed
 * order, so concurrent batches cannot deadlock (admission-lock-order migration).
 *
 * Failures: a statement refused for one request's data (SQLSTATE classes 22, 23) is retried
 * request by request, in order, so that request fails alone; a deadlock or serialization failure
 * is retried once as a whole; anything else (connection lost, no connection within the pool's
 * timeout) fails the batch with AdmissionUnavailable, which the API answers 503, never re-sending
 * nonces that may have been recorded. More than MAX_QUEUED waiting requests are refused the same
 * way at once, so an overloaded process sheds load instead of queueing without bound.
 */
import type { DataSource } from 'typeorm';
import { runPrepared, type PreparedStatement } from '../db/prepared';
import type { AdmittedRead } from '../api/route';

export interface AdmissionRequest {
  keyId: string;
  nonce: string;
  scopeOk: boolean;
  /** The environment's default rate limit. */
  ratePerSecond: number;
  /** The credential's own rate limit, as the API process knows it (Postgres admission reads its own). */
  rateOverride?: number | null;
  burstMultiplier: number;
  /** X-Service-Timestamp as sent (Unix seconds). */
  signedAt: string;
  /** The route's read and its parameters (text), when the route has one and the request names its row. */
  read?: { spec: AdmittedRead; params: unknown[] };
}

export interface AdmissionResult {
  outcome: string;
  retryAfterSeconds: number;
  /**
   * The credential's bucket after this request, when it was admitted or rate-limited: requests
   * left in the burst and seconds until it is full again (the RateLimit header field).
   */
  rateLimit?: { remaining: number; resetSeconds: number };
  /** The read's row (null: none), when the request asked for a read and was admitted. */
  admittedRead?: Record<string, unknown> | null;
}

/** Decides each signed request's admission: in Postgres (AdmissionBatcher) or Redis (RedisAdmission). */
export interface Admission {
  admit(request: AdmissionRequest): Promise<AdmissionResult>;
  /** Whether it makes a request's route read (AdmissionRequest.read) in the same round trip. */
  readonly makesReads: boolean;
  /** Resolves when the store it decides in answers (readiness), where that is not Postgres. */
  ready?(): Promise<unknown>;
}

/** Admission could not be decided (database unreachable, overloaded): the request may be sent again. */
export class AdmissionUnavailable extends Error {
  constructor(message: string, readonly cause?: unknown) {
    super(message);
    this.name = 'AdmissionUnavailable';
  }
}

interface Pending {
  seq: number;
  request: AdmissionRequest;
  resolve: (result: AdmissionResult) => void;
  reject: (error: unknown) => void;
}

interface Row {
  idx: number;
  outcome: string;
  retry_after_seconds: number;
  remaining: number | null;
  reset_seconds: number | null;
  admitted_read?: Record<string, unknown> | null;
}

const ADMISSION_COLUMNS = 6;
const MAX_BATCH = 256;
const MAX_QUEUED = 8 * MAX_BATCH;

/** SQLSTATE of a pg error, if any. */
function sqlState(error: unknown): string {
  return typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : '';
}
/** Refused because of one request's values: the others can go again without it. */
const isDataError = (error: unknown) => /^2[23]/.test(sqlState(error));
const isRetryable = (error: unknown) => sqlState(error) === '40P01' || sqlState(error) === '40001';

// Raw SQL: admission is a plpgsql function over arrays (admission-batches migration); see the file comment.
const ADMIT_BATCH: PreparedStatement = {
  name: 'admit_requests_v2',
  text: 'SELECT idx, outcome, retry_after_seconds, remaining, reset_seconds FROM admit_requests($1, $2, $3, $4, $5, $6)',
};

/**
 * Admission and a route's read for each admitted request: the read's `$n` becomes the n-th text
 * array indexed by the request. `OFFSET 0` keeps the read a per-request lateral lookup (an index
 * scan); without it the planner joins it to the function's rows by hashing the whole table.
 * Rejected requests skip the lookup. Parameters travel as text (see AdmittedRead).
 */
function batchWithRead(read: AdmittedRead): PreparedStatement {
  const sql = read.sql.replace(/\$(\d+)/g, (_, n: string) => `($${Number(n) + ADMISSION_COLUMNS}::text[])[a.idx]`);
  return {
    name: `admit_requests_v2_with_${read.name}`,
    text: `SELECT a.idx, a.outcome, a.retry_after_seconds, a.remaining, a.reset_seconds, r.admitted_read FROM admit_requests($1, $2, $3, $4, $5, $6) a
           LEFT JOIN LATERAL (SELECT row_to_json(s) AS admitted_read FROM (${sql}) s WHERE a.outcome = 'admitted' OFFSET 0) r ON true`,
  };
}

export class AdmissionBatcher implements Admission {
  readonly makesReads = true;
  /** One queue per kind of read (none, or a route's read by name): a batch carries one statement. */
  private readonly queues = new Map<string, Pending[]>();
  private readonly statements = new Map<string, PreparedStatement>();
  private inFlight = 0;
  private scheduled = false;
  private queued = 0;
  private seq = 0;
  /** Statements sent and the requests they carried, since start (for benchmarks and tests). */
  readonly sent = { batches: 0, requests: 0 };

  constructor(
    private readonly dataSource: DataSource,
    private readonly maxInFlight = 2,
  ) {}

  admit(request: AdmissionRequest): Promise<AdmissionResult> {
    if (this.queued >= MAX_QUEUED) return Promise.reject(new AdmissionUnavailable(`${this.queued} requests already wait for admission`));
    return new Promise((resolve, reject) => {
      const kind = request.read?.spec.name ?? '';
      let queue = this.queues.get(kind);
      if (!queue) this.queues.set(kind, (queue = []));
      if (request.read && !this.statements.has(kind)) this.statements.set(kind, batchWithRead(request.read.spec));
      queue.push({ seq: this.seq++, request, resolve, reject });
      this.queued++;
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    // After the I/O of this turn: every request whose bytes arrived in it joins the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.maxInFlight) {
      // The kind whose oldest request has waited longest goes next.
      let next: [string, Pending[]] | undefined;
      for (const entry of this.queues) if (entry[1].length > 0 && (!next || entry[1][0].seq < next[1][0].seq)) next = entry;
      if (!next) return;
      const [kind, queue] = next;
      const batch = queue.splice(0, MAX_BATCH);
      this.queued -= batch.length;
      this.inFlight++;
      this.send(kind, batch)
        .catch((error: unknown) => batch.forEach((p) => p.reject(error)))
        .finally(() => {
          this.inFlight--;
          if (this.queued > 0) this.schedule();
        });
    }
  }

  private async send(kind: string, batch: Pending[]): Promise<void> {
    this.sent.batches++;
    this.sent.requests += batch.length;
    // Stable sort by key id: one credential's requests stay in arrival order, next to each other.
    const ordered = batch.map((p, i) => ({ p, i })).sort((a, b) => (a.p.request.keyId < b.p.request.keyId ? -1 : a.p.request.keyId > b.p.request.keyId ? 1 : a.i - b.i));
    const requests = ordered.map((o) => o.p.request);
    const values: unknown[] = [
      requests.map((r) => r.keyId),
      requests.map((r) => r.nonce),
      requests.map((r) => r.scopeOk),
      requests.map((r) => r.ratePerSecond),
      requests[0].burstMultiplier,
      requests.map((r) => r.signedAt),
    ];
    const statement = kind === '' ? ADMIT_BATCH : this.statements.get(kind)!;
    if (kind !== '') {
      const width = Math.max(...requests.map((r) => r.read?.params.length ?? 0));
      for (let n = 0; n < width; n++) values.push(requests.map((r) => (r.read ? String(r.read.params[n]) : null)));
    }
    if (requests.some((r) => r.burstMultiplier !== requests[0].burstMultiplier)) throw new Error('one burst multiplier per batch');
    let rows: Row[];
    try {
      rows = await runPrepared<Row>(this.dataSource, statement, values).catch((error: unknown) => {
        if (isRetryable(error)) return runPrepared<Row>(this.dataSource, statement, values);
        throw error;
      });
    } catch (error) {
      if (isDataError(error)) {
        if (batch.length === 1) return batch[0].reject(error);
        // One request's values were refused and nothing was written: the others go again, one at a time, in order.
        for (const p of batch) await this.send(kind, [p]).catch((e: unknown) => p.reject(e));
        return;
      }
      const unavailable = new AdmissionUnavailable('admission could not be decided: the database did not answer', error);
      for (const p of batch) p.reject(unavailable);
      return;
    }
    const answered = new Set<number>();
    for (const row of rows) {
      const { p } = ordered[row.idx - 1];
      answered.add(row.idx - 1);
      p.resolve({
        outcome: row.outcome,
        retryAfterSeconds: row.retry_after_seconds,
        ...(row.remaining !== null && row.reset_seconds !== null ? { rateLimit: { remaining: row.remaining, resetSeconds: row.reset_seconds } } : {}),
        admittedRead: p.request.read && row.outcome === 'admitted' ? (row.admitted_read ?? null) : undefined,
      });
    }
    ordered.forEach((o, i) => answered.has(i) || o.p.reject(new Error('admission returned no row for this request')));
  }
}
