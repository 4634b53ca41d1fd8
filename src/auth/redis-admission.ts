/**
 * Admission of signed requests in Redis (when REDIS_URL is set; bench/RESULTS.md): the same rules
 * as Postgres' `admit_requests` in the same order, decided by one Lua script per batch of requests
 * (those whose signatures were checked in the same event-loop turn, or in the few after it while
 * more still arrive: schedule()). A script runs atomically, so
 * every API process sharing this Redis sees every nonce and takes from the same bucket, exactly as
 * with the shared Postgres functions (CONTRACT §1–§2).
 *
 * What stays with the API process: unknown and revoked keys and a credential's own rate limit come
 * from the credential cache, which the Postgres change feed keeps current (CredentialService).
 *
 * Keys: `<prefix>store-id` (the store's random id, see storeId), `<prefix>epoch`, `<prefix>n:<key id>:<nonce>` (a used nonce, kept until its timestamp is 420 s
 * old, beyond the 300 s skew any API process accepts, with 120 s for clocks that disagree) and `<prefix>b:<key id>` (the GCRA bucket's
 * theoretical arrival time in microseconds of Redis' clock). All are in one Redis, not a cluster.
 *
 * The crash epoch: Redis is run without persistence of its own (or with a snapshot removed once
 * loaded, as `npm start` does), so a Redis that lost its data comes back empty. The script then
 * records the current second as the epoch, and refuses requests signed before it
 * (`signed_before_restart`): their nonces may have been forgotten. `markFresh` records epoch 0
 * for a Redis known never to have served (a new database; the tests and the benchmark).
 *
 * Memory: nonces must never be evicted (an evicted nonce is a replay admitted), so start-up
 * refuses a Redis whose `maxmemory-policy` is not `noeviction`; a full Redis then refuses writes,
 * and the API answers 503.
 *
 * Failures: a Redis error or timeout fails the batch with AdmissionUnavailable (503, Retry-After),
 * never re-sent, since its nonces may have been recorded. Commands are never queued while the
 * connection is down.
 */
import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { AdmissionUnavailable, type Admission, type AdmissionRequest, type AdmissionResult } from './admission';

/**
 * How long a used nonce is kept, from its timestamp (or from now, if that is later): the 300 s an
 * API process accepts a timestamp for, plus 120 s for API hosts whose clocks run behind Redis'
 * (start() refuses a difference over 60 s).
 */
const NONCE_SECONDS = 300 + 120;
const MAX_CLOCK_DIFFERENCE_SECONDS = 60;
/** SET … EXAT / PXAT, which the script uses, came with Redis 6.2. */
const MIN_REDIS_VERSION = [6, 2];

const ADMIT_SCRIPT = `
local storeId = redis.call('GET', KEYS[2])
if storeId == false then
  -- This Redis came back empty: it is still the store this process holds (the epoch below refuses what it forgot).
  redis.call('SET', KEYS[2], ARGV[4])
elseif storeId ~= ARGV[4] then
  return {'another_store', storeId}
end
local t = redis.call('TIME')
local nowSec = tonumber(t[1])
local now = nowSec * 1000000 + tonumber(t[2])
local epoch = tonumber(redis.call('GET', KEYS[1]) or '')
if epoch == nil then
  epoch = nowSec
  if tonumber(t[2]) > 0 then epoch = nowSec + 1 end
  redis.call('SET', KEYS[1], string.format('%d', epoch))
end
local burstWindow = tonumber(ARGV[1]) * 1000000
local prefix = ARGV[2]
-- Each bucket is read once a batch and written once after it (tats, changed): its requests are
-- decided in order against the value the one before left.
local tats, changed = {}, {}
local out = {}
for key, nonce, scopeOk, rateText, signedAtText in string.gmatch(ARGV[3], '(%S+) (%S+) (%S+) (%S+) (%S+)\\n') do
  local rate, signedAt = tonumber(rateText), tonumber(signedAtText)
  local nonceKey = prefix .. 'n:' .. key .. ':' .. nonce
  local outcome, retry, remaining, reset = 'admitted', 0, -1, -1
  if signedAt < epoch then
    outcome = 'signed_before_restart'
  elseif scopeOk ~= '1' then
    -- A replay is refused as one before a missing scope is.
    if redis.call('EXISTS', nonceKey) == 1 then outcome = 'replayed' else outcome = 'forbidden' end
  else
    local bucketKey = prefix .. 'b:' .. key
    local tat = tats[bucketKey]
    if tat == nil then
      tat = tonumber(redis.call('GET', bucketKey) or '0')
      tats[bucketKey] = tat
    end
    -- As in Postgres; configuration and the CLI refuse a rate whose bucket holds no request. The
    -- bucket is kept in whole microseconds and the interval rounded down, so a full bucket admits
    -- its whole burst at every rate (migration admission-whole-burst).
    local window = burstWindow
    local nextTat = math.max(tat, now) + math.max(1, math.floor(1000000 / rate))
    if nextTat <= now + window then
      -- One command records the nonce if it is new: an existing one is a replay, and takes no token.
      if redis.call('SET', nonceKey, '1', 'NX', 'EXAT', string.format('%d', math.max(signedAt, nowSec) + NONCE_SECONDS)) then
        tats[bucketKey] = nextTat
        changed[bucketKey] = true
        -- What is left of the burst, and when the bucket is full again (the RateLimit header).
        remaining = math.floor((now + window - nextTat) * rate / 1000000 + 1e-9)
        reset = math.ceil((nextTat - now) / 1000000)
      else
        outcome = 'replayed'
      end
    else
      if redis.call('EXISTS', nonceKey) == 1 then
        outcome = 'replayed'
      else
        outcome = 'rate_limited'
        retry = math.min(86400, math.max(1, math.ceil((nextTat - window - now) / 1000000)))
        remaining = 0
        reset = math.ceil((math.max(tat, now) - now) / 1000000)
      end
    end
  end
  out[#out + 1] = outcome .. ' ' .. retry .. ' ' .. remaining .. ' ' .. reset
end
for bucketKey in pairs(changed) do
  local tat = tats[bucketKey]
  redis.call('SET', bucketKey, string.format('%.0f', tat), 'PXAT', string.format('%.0f', math.ceil(tat / 1000) + 1000))
end
-- One string, a line a request: cheaper to send and to read than four replies a request.
return table.concat(out, '\\n')
`.replace(/NONCE_SECONDS/g, String(NONCE_SECONDS));

const DEFAULT_PREFIX = 'adm:';
const MAX_BATCH = 256;
/** Event-loop turns a batch waits at most while requests still join it (schedule()). */
const HOLD_TURNS = 4;
/** Requests waiting or in flight beyond which a process sheds load (503) instead of queueing. */
const MAX_OUTSTANDING = 4096;

/** One line a request (`outcome retry remaining reset`), or `['another_store', id]`. */
type AdmitCommand = (epochKey: string, storeIdKey: string, ...args: (string | number)[]) => Promise<string | string[]>;
type ClaimCommand = (storeIdKey: string, candidate: string) => Promise<string>;

/** The store's id, or `candidate` written as it when it has none. */
const CLAIM_SCRIPT = `
local id = redis.call('GET', KEYS[1])
if id then return id end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
`;

/** Deletes the store's id if it is still `ARGV[1]` (a start that wrote it and then failed). */
const DISOWN_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

interface Pending {
  request: AdmissionRequest;
  resolve: (result: AdmissionResult) => void;
  reject: (error: unknown) => void;
}

/** A Redis connection for admission: no offline queue, no retries of a command, a 2 s command timeout. */
export function admissionRedis(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 2_000,
    connectTimeout: 5_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 1_000),
    ...options,
  });
}

/** Records that a Redis has never admitted a request, so nothing signed before now is refused (tests, benchmarks). */
export async function markAdmissionStoreFresh(url: string): Promise<void> {
  const admission = new RedisAdmission(admissionRedis(url));
  try {
    await admission.markFresh();
  } finally {
    await admission.close();
  }
}

export class RedisAdmission implements Admission {
  readonly makesReads = false;
  private pending: Pending[] = [];
  private outstanding = 0;
  private scheduled = false;
  private inFlight = 0;
  private readonly admitBatch: AdmitCommand;
  private readonly claim: ClaimCommand;
  private readonly disown: ClaimCommand;
  private id?: string;
  /** This process wrote the id at start (the Redis had none): a failed start removes it again. */
  private wroteId = false;
  private lastForeignId?: string;
  readonly sent = { batches: 0, requests: 0 };

  constructor(
    private readonly redis: Redis,
    private readonly prefix = DEFAULT_PREFIX,
    /**
     * Scripts in flight at once; requests arriving meanwhile wait for the next. Each script costs
     * the API process a socket write that wakes Redis (measured at ~0.1 ms here, more than the
     * script), so fewer, larger batches are cheaper per request (bench/RESULTS.md).
     */
    private readonly maxInFlight = 1,
    /** Called once per foreign id met: the Redis at this address is not the store this process holds. */
    private readonly onForeignStore?: (foreignId: string) => void,
  ) {
    redis.defineCommand('partnerApiAdmit', { numberOfKeys: 2, lua: ADMIT_SCRIPT });
    redis.defineCommand('partnerApiClaimStore', { numberOfKeys: 1, lua: CLAIM_SCRIPT });
    redis.defineCommand('partnerApiDisownStore', { numberOfKeys: 1, lua: DISOWN_SCRIPT });
    const commands = redis as unknown as { partnerApiAdmit: AdmitCommand; partnerApiClaimStore: ClaimCommand; partnerApiDisownStore: ClaimCommand };
    this.admitBatch = commands.partnerApiAdmit.bind(redis);
    this.claim = commands.partnerApiClaimStore.bind(redis);
    this.disown = commands.partnerApiDisownStore.bind(redis);
  }

  /**
   * The store's identity: a random id kept in Redis (`<prefix>store-id`), read or written by
   * start(). Two Redis servers at one address on two hosts are two stores, each with its own id,
   * so API processes using them never serve side by side (src/auth/admission-store.ts). A Redis
   * that comes back empty gets the id back from the first batch any running process sends.
   */
  get storeId(): string {
    if (!this.id) throw new Error('the Redis admission store has no id before start()');
    return this.id;
  }

  /** A start that failed after writing the store's id removes it, so the processes that hold the store's old id write it back. */
  async abandonStart(): Promise<void> {
    if (this.wroteId && this.id) await this.disown(`${this.prefix}store-id`, this.id).catch(() => undefined);
    this.wroteId = false;
  }

  /** Connects and checks Redis: its version, that it never evicts, and that its clock agrees with this host's (see the file comment). */
  async start(): Promise<void> {
    if (this.redis.status === 'wait') await this.redis.connect();
    const version = /redis_version:(\S+)/.exec(await this.redis.info('server'))?.[1] ?? '0';
    const [major, minor] = version.split('.').map(Number);
    if (major < MIN_REDIS_VERSION[0] || (major === MIN_REDIS_VERSION[0] && minor < MIN_REDIS_VERSION[1])) {
      throw new Error(`Redis for admission must be ${MIN_REDIS_VERSION.join('.')} or later (it is ${version})`);
    }
    const policy = /maxmemory_policy:(\S+)/.exec(await this.redis.info('memory'))?.[1];
    if (policy !== 'noeviction') {
      throw new Error(`Redis for admission must have maxmemory-policy noeviction (it has ${policy ?? 'unknown'}): an evicted nonce would admit a replay`);
    }
    const [seconds] = await this.redis.time();
    const difference = Math.abs(Number(seconds) - Date.now() / 1000);
    if (difference > MAX_CLOCK_DIFFERENCE_SECONDS) {
      throw new Error(`this host's clock and Redis' differ by ${difference.toFixed(0)} s (at most ${MAX_CLOCK_DIFFERENCE_SECONDS} allowed): nonces could expire while their timestamps are still accepted`);
    }
    const candidate = randomUUID();
    this.id = await this.claim(`${this.prefix}store-id`, candidate);
    this.wroteId = this.id === candidate;
  }

  /** Starts a new epoch now: requests signed before this second are refused (a switch of store, src/auth/admission-store.ts). */
  async startEpoch(): Promise<void> {
    const [seconds, micros] = await this.redis.time();
    await this.redis.set(`${this.prefix}epoch`, String(Number(seconds) + (Number(micros) > 0 ? 1 : 0)));
  }

  /** Epoch 0 unless one is set: this Redis has never admitted a request (a new database, src/auth/admission-store.ts). */
  async markFresh(): Promise<void> {
    if (this.redis.status === 'wait') await this.redis.connect();
    await this.redis.set(`${this.prefix}epoch`, '0', 'NX');
  }

  /** Redis answers (readiness). */
  async ready(): Promise<void> {
    await this.redis.ping();
  }

  admit(request: AdmissionRequest): Promise<AdmissionResult> {
    if (!/^\S+$/.test(request.keyId) || !/^\S+$/.test(request.nonce) || !/^\d+$/.test(request.signedAt)) {
      return Promise.reject(new Error('a key id, nonce or timestamp that admission cannot carry'));
    }
    if (this.outstanding >= MAX_OUTSTANDING) return Promise.reject(new AdmissionUnavailable(`${this.outstanding} requests already wait for admission`));
    this.outstanding++;
    return new Promise((resolve, reject) => {
      this.pending.push({ request, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    // After the I/O of this turn: every request whose bytes arrived in it joins the batch. While
    // the turns after it still bring more, the batch waits for them (up to HOLD_TURNS): a script
    // for more requests costs the API process and Redis less a request (bench/RESULTS.md). A lone
    // request waits one turn, as before.
    let seen = this.pending.length;
    let turns = 0;
    const settle = () => {
      if (this.pending.length > seen && this.pending.length < MAX_BATCH && turns++ < HOLD_TURNS) {
        seen = this.pending.length;
        setImmediate(settle);
      } else {
        this.flush();
      }
    };
    setImmediate(settle);
  }

  private flush(): void {
    this.scheduled = false;
    while (this.pending.length > 0 && this.inFlight < this.maxInFlight) {
      const batch = this.pending.splice(0, MAX_BATCH);
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        if (this.pending.length > 0) this.schedule();
      });
    }
  }

  private async send(batch: Pending[]): Promise<void> {
    this.sent.batches++;
    this.sent.requests += batch.length;
    try {
      // One line per request, fields separated by spaces (admit() refuses fields holding any).
      let lines = '';
      for (const { request: r } of batch) {
        if (r.burstMultiplier !== batch[0].request.burstMultiplier) throw new Error('one burst multiplier per batch');
        lines += `${r.keyId} ${r.nonce} ${r.scopeOk ? 1 : 0} ${r.rateOverride ?? r.ratePerSecond} ${r.signedAt}\n`;
      }
      const out = await this.admitBatch(`${this.prefix}epoch`, `${this.prefix}store-id`, String(batch[0].request.burstMultiplier), this.prefix, lines, this.storeId);
      if (Array.isArray(out)) {
        if (out[0] !== 'another_store') throw new Error(`admission script answered ${JSON.stringify(out)}`);
        // Another Redis answers at this address (or one started after an empty restart wrote its own id): never admit there.
        const foreign = String(out[1]);
        if (foreign !== this.lastForeignId) {
          this.lastForeignId = foreign;
          this.onForeignStore?.(foreign);
        }
        throw new Error(`the Redis at this address is another admission store (${foreign}, not ${this.storeId})`);
      }
      const answers = out.split('\n');
      if (answers.length !== batch.length) throw new Error(`admission script answered ${answers.length} of ${batch.length} requests`);
      const results = answers.map((answer): AdmissionResult => {
        const [outcome, retry, remaining, reset] = answer.split(' ');
        if (!outcome || reset === undefined) throw new Error(`admission script answered ${JSON.stringify(answer)} for a request`);
        const left = Number(remaining);
        const resetSeconds = Number(reset);
        return left >= 0 && resetSeconds >= 0 ? { outcome, retryAfterSeconds: Number(retry), rateLimit: { remaining: left, resetSeconds } } : { outcome, retryAfterSeconds: Number(retry) };
      });
      batch.forEach((p, i) => p.resolve(results[i]));
    } catch (error) {
      const unavailable = new AdmissionUnavailable('admission could not be decided: Redis did not answer', error);
      for (const p of batch) p.reject(unavailable);
    } finally {
      this.outstanding -= batch.length;
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
