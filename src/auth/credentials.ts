/**
 * Issuing, finding and revoking partner credentials. Secrets are generated here, shown once to
 * the operator, and stored only sealed (SecretBox).
 */
import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
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
  revoked: boolean;
}

export class CredentialService {
  /** Decrypted credentials by key id; what is cached never changes after issue except revocation, which admit_request checks on every request. */
  private readonly cache = new Map<string, { value: ResolvedCredential; until: number }>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly secretBox: SecretBox,
    private readonly cacheMs = 60_000,
  ) {}

  async issue(input: { partnerId: string; environment: Environment; scopes: Scope[]; rateLimitPerSecond?: number | null }): Promise<IssuedCredential> {
    const prefix = KEY_PREFIX[input.environment];
    const keyId = prefix.keyId + randomToken(12);
    const secret = prefix.secret + randomToken(32);
    const repo = this.dataSource.getRepository(Credential);
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

  /** The credential behind a key id, secret decrypted; undefined when unknown. */
  async resolve(keyId: string): Promise<ResolvedCredential | undefined> {
    const hit = this.cache.get(keyId);
    if (hit && hit.until > Date.now()) return hit.value;
    const row = await this.dataSource.getRepository(Credential).findOne({ where: { keyId } });
    if (!row) return undefined;
    const value: ResolvedCredential = {
      keyId: row.keyId,
      partnerId: row.partnerId,
      environment: row.environment,
      scopes: row.scopes,
      secret: this.secretBox.open(row.secretSealed, row.keyId),
      revoked: row.revokedAt !== null,
    };
    this.cache.set(keyId, { value, until: Date.now() + this.cacheMs });
    return value;
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
    this.cache.delete(keyId);
    return row;
  }

  async setRateLimit(keyId: string, perSecond: number | null): Promise<Credential | undefined> {
    const repo = this.dataSource.getRepository(Credential);
    const row = await repo.findOne({ where: { keyId } });
    if (!row) return undefined;
    row.rateLimitPerSecond = perSecond;
    return repo.save(row);
  }

  async list(partnerId?: string): Promise<Credential[]> {
    return this.dataSource.getRepository(Credential).find({
      where: partnerId ? { partnerId } : {},
      relations: { partner: true },
      order: { createdAt: 'ASC' },
    });
  }
}
