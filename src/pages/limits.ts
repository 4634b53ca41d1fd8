/**
 * Limits on the public pages per client address (CONTRACT §15), in Redis when the API has one
 * (every API process shares the counts) and in the process otherwise (npm start without Redis,
 * tests): rate-limiter-flexible's fixed windows, keyed by the client (`clientKey` of `ctx.ip`,
 * which reads X-Forwarded-For only with TRUST_PROXY: an IPv4 address, an IPv6 /64). If Redis stops answering, each process keeps
 * limiting on its own (the library's insurance limiter) rather than letting everyone through.
 *
 * - page requests: 120 a minute, at most 60 of them in any 30 seconds (the burst);
 * - tracking links (`/r/`): always redirect, but count at most 30 clicks a minute;
 * - declined cards: 10 an hour across sessions (each session also stops at 5), each card taking
 *   its point before the processor is asked;
 * - "Buy now": 20 sessions an hour;
 * - partner applications (/partners/apply): 10 an hour;
 * - tracking-link codes looked up (`/r/` of a code not already known): 60 a minute.
 */
import { clientKey } from '../api/client-key';
import type { Redis } from 'ioredis';
import { pageLimitRefusals } from '../metrics/metrics';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, RateLimiterUnion, type RateLimiterAbstract } from 'rate-limiter-flexible';

export interface PageLimitSettings {
  pagesPerMinute: number;
  pageBurst: number;
  clicksPerMinute: number;
  declinesPerHour: number;
  buyNowPerHour: number;
  applicationsPerHour: number;
  /** Tracking-link codes an address may have looked up a minute (a code already known costs none). */
  lookupsPerMinute: number;
}

export const DEFAULT_PAGE_LIMITS: PageLimitSettings = { pagesPerMinute: 120, pageBurst: 60, clicksPerMinute: 30, declinesPerHour: 10, buyNowPerHour: 20, applicationsPerHour: 10, lookupsPerMinute: 60 };

/** Allowed, or refused with the seconds until it would be. */
export type Verdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

const refused = (msBeforeNext: number): Verdict => ({ allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)) });

export class PageLimits {
  private readonly pages: RateLimiterUnion;
  private readonly clicks: RateLimiterAbstract;
  private readonly declines: RateLimiterAbstract;
  private readonly buyNow: RateLimiterAbstract;
  private readonly applications: RateLimiterAbstract;
  private readonly lookups: RateLimiterAbstract;

  constructor(settings: PageLimitSettings = DEFAULT_PAGE_LIMITS, redis?: Redis) {
    const limiter = (keyPrefix: string, points: number, duration: number): RateLimiterAbstract => {
      const memory = new RateLimiterMemory({ keyPrefix, points, duration });
      return redis ? new RateLimiterRedis({ storeClient: redis, keyPrefix: `pl:${keyPrefix}`, points, duration, insuranceLimiter: memory }) : memory;
    };
    this.pages = new RateLimiterUnion(limiter('pages', settings.pagesPerMinute, 60), limiter('burst', settings.pageBurst, 30));
    this.clicks = limiter('clicks', settings.clicksPerMinute, 60);
    this.declines = limiter('declines', settings.declinesPerHour, 3600);
    this.buyNow = limiter('buy', settings.buyNowPerHour, 3600);
    this.applications = limiter('apply', settings.applicationsPerHour ?? DEFAULT_PAGE_LIMITS.applicationsPerHour, 3600);
    this.lookups = limiter('lookups', settings.lookupsPerMinute ?? DEFAULT_PAGE_LIMITS.lookupsPerMinute, 60);
  }

  /** One page request from `address`. */
  async page(address: string): Promise<Verdict> {
    try {
      await this.pages.consume(clientKey(address));
      return { allowed: true };
    } catch (err) {
      // A union rejects with each limiter's answer that refused, by key prefix.
      const answers = Object.values(err as Record<string, RateLimiterRes>).filter((r) => r instanceof RateLimiterRes);
      if (!answers.length) throw err;
      pageLimitRefusals.inc({ limit: 'pages' });
      return refused(Math.max(...answers.map((r) => r.msBeforeNext)));
    }
  }

  /** Whether a click from `address` is counted (the redirect happens anyway). */
  async countClick(address: string): Promise<boolean> {
    return (await this.take(this.clicks, address, 'clicks')).allowed;
  }

  /**
   * A card submitted from `address`: one of its hourly declines is taken now, atomically, before
   * the processor is asked, so simultaneous submits cannot all pass while none has been declined
   * yet. Refused once they are used up. `notDeclined` gives the point back.
   */
  async takeCardAttempt(address: string): Promise<Verdict> {
    return this.take(this.declines, address, 'declines');
  }

  /** The card submitted from `address` was not declined (paid, or never reached the processor): its point back. */
  async notDeclined(address: string): Promise<void> {
    await this.declines.reward(clientKey(address), 1);
  }

  /** One "Buy now" (a checkout session opened) from `address`. */
  async buyNowPress(address: string): Promise<Verdict> {
    return this.take(this.buyNow, address, 'buy_now');
  }

  /** One tracking-link code from `address` looked up in the database (an unknown one, or one not cached). */
  async linkLookup(address: string): Promise<Verdict> {
    return this.take(this.lookups, address, 'lookups');
  }

  /** One partner application sent from `address`. */
  async application(address: string): Promise<Verdict> {
    return this.take(this.applications, address, 'applications');
  }

  /** One point from `limiter`; a refusal is counted under `limit` when given. */
  private async take(limiter: RateLimiterAbstract, address: string, limit?: string): Promise<Verdict> {
    try {
      await limiter.consume(clientKey(address));
      return { allowed: true };
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        if (limit) pageLimitRefusals.inc({ limit });
        return refused(err.msBeforeNext);
      }
      throw err;
    }
  }
}
