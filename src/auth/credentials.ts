/**
 * Issuing, finding and revoking partner credentials. Secrets are generated here, shown once to
 * the operator, and stored only sealed (SecretBox).
 */
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { DataSource, EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { CachedReads, type ChangeFeed } from '../db/change-feed';
import { CREDENTIAL_CHANNEL } from '../db/migrations/1795001400000-change-feed';
import { Credential } from '../db/entities/credential';
import type { Scope } from './scopes';
import type { SecretBox } from './secret-box';

const KEY_PREFIX: Record<Environment, { keyId: string; secret: string }> = {
  sandbox: { keyId: 'pk_test_', secret: 'sk_test_' },
  live: { keyId: 'pk_live_', secret: 'sk_live_' },
};

/** The environment a key id belongs to, from its prefix alone; undefined for a malformed id. */
export function environmentOfKeyId(keyId: string): Environment | undefined {
  if (/^pk_test_[A-Za-z0-9]{16,64}$/.test(keyId)) return 'sandbox';
  if (/^pk_live_[A-Za-z0-9]{16,64}$/.test(keyId)) return 'live';
  return undefined;
}

function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

export interface IssuedCredential {
  keyId: string;
  secret: string;
  credential: Credential;
}

export interface ResolvedCredential {
  keyId: string;
  partnerId: string;
  environment: Environment;
  scopes: readonly Scope[];
  secret: string;
  /** The secret as a KeyObject, for verifying signatures (HMAC) without importing the key each time. */
  signingKey: KeyObject;
  revoked: boolean;
  /** The operator's override of the environment's rate limit, if any. */
  rateLimitPerSecond: number | null;
}

/**
 * Without a change feed, a resolved credential is kept `cacheMs` (its secret and scopes never change
 * after issue; revocation and the rate are read again by Postgres admission on every request).
 * With one (Redis admission, where the API process decides revocation and the rate itself), it is
 * kept until Postgres says the credential changed (at most a minute), and read on every request
 * while the feed is down.
 */
export class CredentialService {
  private readonly cache = new Map<string, { value: ResolvedCredential; until: number }>();
  private readonly fed?: CachedReads<string, { value?: ResolvedCredential }>;
  /**
   * Key ids that resolved to nothing, for a few seconds: a flood of made-up key ids costs one
   * database read each at most every 10 s, and never takes the places of real credentials in the
   * cache above (they have their own).
   */
  private readonly unknown = new LRUCache<string, true>({ max: 100_000, ttl: 10_000 });

  constructor(
    private readonly dataSource: DataSource,
    private readonly secretBox: SecretBox,
    private readonly cacheMs = 60_000,
    feed?: ChangeFeed,
  ) {
    if (feed) {
      const fed = new CachedReads<string, { value?: ResolvedCredential }>(
        feed,
        // The feed's heartbeat finds a dead connection within seconds; the minute's cap is a backstop.
        new LRUCache({ max: 10_000, ttl: 60_000 }),
      );
      feed.on(CREDENTIAL_CHANNEL, (keyId) => {
        fed.forget(keyId);
        this.unknown.delete(keyId);
      });
      this.fed = fed;
    }
  }

  /** A new credential; in `manager`'s transaction when given (it exists only if that commits). */
  async issue(input: { partnerId: string; environment: Environment; scopes: Scope[]; rateLimitPerSecond?: number | null }, manager: EntityManager = this.dataSource.manager): Promise<IssuedCredential> {
    const prefix = KEY_PREFIX[input.environment];
    const keyId = prefix.keyId + randomToken(12);
    const secret = prefix.secret + randomToken(32);
    const repo = manager.getRepository(Credential);
    const credential = await repo.save(
      repo.create({
        keyId,
        partnerId: input.partnerId,
        environment: input.environment,
        scopes: input.scopes,
        secretSealed: this.secretBox.seal(secret, keyId),
        rateLimitPerSecond: input.rateLimitPerSecond ?? null,
        revokedAt: null,
      }),
    );
    return { keyId, secret, credential };
  }

  /** What this process holds for a key id right now, without waiting (undefined: ask resolve). */
  peek(keyId: string): { value?: ResolvedCredential } | undefined {
    if (this.unknown.has(keyId)) return {};
    if (this.fed) return this.fed.peek(keyId);
    const hit = this.cache.get(keyId);
    return hit && hit.until > Date.now() ? { value: hit.value } : undefined;
  }

  /** A stored credential's secret, opened (the approval's single-use link shows it once). */
  openSecret(credential: Credential): string {
    return this.secretBox.open(credential.secretSealed, credential.keyId);
  }

  /** The credential behind a key id, secret decrypted; undefined when unknown. */
  async resolve(keyId: string): Promise<ResolvedCredential | undefined> {
    if (this.unknown.has(keyId)) return undefined;
    if (this.fed) {
      const { value } = await this.fed.get(keyId, async () => ({ value: await this.load(keyId) }));
      if (!value) this.notFound(keyId);
      return value;
    }
    const hit = this.cache.get(keyId);
    if (hit && hit.until > Date.now()) return hit.value;
    const value = await this.load(keyId);
    if (value) this.cache.set(keyId, { value, until: Date.now() + this.cacheMs });
    else this.notFound(keyId);
    return value;
  }

  /** An unknown key id goes to its own short-lived cache, never the credentials'. */
  private notFound(keyId: string): void {
    this.fed?.forget(keyId);
    this.unknown.set(keyId, true);
  }

  private async load(keyId: string): Promise<ResolvedCredential | undefined> {
    const row = await this.dataSource.getRepository(Credential).findOne({ where: { keyId } });
    if (!row) return undefined;
    const secret = this.secretBox.open(row.secretSealed, row.keyId);
    return {
      keyId: row.keyId,
      partnerId: row.partnerId,
      environment: row.environment,
      scopes: row.scopes,
      secret,
      signingKey: createSecretKey(Buffer.from(secret, 'utf8')),
      revoked: row.revokedAt !== null,
      rateLimitPerSecond: row.rateLimitPerSecond,
    };
  }

  /** The secret of a stored credential, for the operator's dev stack banner only. */
  async revealSecret(keyId: string): Promise<string | undefined> {
    return (await this.resolve(keyId))?.secret;
  }

  async revoke(keyId: string): Promise<Credential | undefined> {
    const repo = this.dataSource.getRepository(Credential);
    const row = await repo.findOne({ where: { keyId } });
    if (!row) return undefined;
    if (!row.revokedAt) {
      row.revokedAt = new Date();
      await repo.save(row);
    }
    this.forget(keyId);
    return row;
  }

  async setRateLimit(keyId: string, perSecond: number | null): Promise<Credential | undefined> {
    const repo = this.dataSource.getRepository(Credential);
    const row = await repo.findOne({ where: { keyId } });
    if (!row) return undefined;
    row.rateLimitPerSecond = perSecond;
    const saved = await repo.save(row);
    this.forget(keyId);
    return saved;
  }

  /** Drops this process's copy at once (other processes hear it from the change feed). */
  private forget(keyId: string): void {
    this.cache.delete(keyId);
    this.fed?.forget(keyId);
  }

  async list(partnerId?: string): Promise<Credential[]> {
    return this.dataSource.getRepository(Credential).find({
      where: partnerId ? { partnerId } : {},
      relations: { partner: true },
      order: { createdAt: 'ASC' },
    });
  }
}
