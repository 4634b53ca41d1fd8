/**
 * Secrets at rest (credential secrets, webhook signing secrets): AES-256-GCM under the master
 * keyring's current key. Stored layout, one buffer:
 *
 *   1-byte key version | 12-byte IV | 16-byte auth tag | ciphertext
 *
 * The associated data (a credential's key id, a webhook endpoint's partner and environment) is
 * bound, so a ciphertext copied onto another row fails to decrypt. Values sealed before the
 * keyring have no version byte: they open under version 1 (MASTER_KEY given as one key is version
 * 1) until `admin keys rotate` seals them again under the current version (docs/operators/security.md).
 *
 * The keys derived from the master key for tokens (HKDF-SHA256, one per purpose) come from every
 * version in the ring: tokens are signed with the current one and verified with any, so a rotation
 * breaks no checkout or progress link signed before it.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The master keys by version (1–255); the highest seals, every one opens what it sealed. */
export interface MasterKeyring {
  current: number;
  keys: ReadonlyMap<number, Buffer>;
}

/** A keyring of one key, version 1 (MASTER_KEY as a single key). */
export function singleKeyring(key: Buffer): MasterKeyring {
  return { current: 1, keys: new Map([[1, key]]) };
}

export class SecretBox {
  private readonly ring: MasterKeyring;

  constructor(masterKey: MasterKeyring | Buffer) {
    this.ring = Buffer.isBuffer(masterKey) ? singleKeyring(masterKey) : masterKey;
    for (const [version, key] of this.ring.keys) {
      if (!Number.isInteger(version) || version < 1 || version > 255) throw new Error(`master key versions are 1 to 255 (not ${version})`);
      if (key.length !== 32) throw new Error('the master key must be 32 bytes');
    }
    if (!this.ring.keys.has(this.ring.current)) throw new Error('the current master key version is not in the keyring');
  }

  /** The version new values are sealed under. */
  get currentVersion(): number {
    return this.ring.current;
  }

  seal(plaintext: string, associatedData: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.ring.keys.get(this.ring.current)!, iv);
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(this.ring.current), iv, cipher.getAuthTag(), ciphertext]);
  }

  open(sealed: Buffer, associatedData: string): string {
    return this.opened(sealed, associatedData).plaintext;
  }

  /** Whether `sealed` is sealed under the current version (else `admin keys rotate` seals it again). */
  isCurrent(sealed: Buffer, associatedData: string): boolean {
    return this.opened(sealed, associatedData).version === this.ring.current;
  }

  /** The plaintext and the version it was sealed under (0: before the keyring, no version byte). */
  private opened(sealed: Buffer, associatedData: string): { plaintext: string; version: number } {
    const version = sealed[0];
    const key = this.ring.keys.get(version);
    if (key && sealed.length >= 1 + IV_BYTES + TAG_BYTES) {
      try {
        return { plaintext: decrypt(key, sealed.subarray(1), associatedData), version };
      } catch (err) {
        // A value from before the keyring whose IV happens to begin with a version's number: tried below.
        if (!this.ring.keys.has(1)) throw err;
      }
    }
    const legacy = this.ring.keys.get(1);
    if (!legacy) throw new Error(`a secret sealed under master key version ${version}, which MASTER_KEY does not hold (add it to the keyring)`);
    try {
      return { plaintext: decrypt(legacy, sealed, associatedData), version: 0 };
    } catch {
      throw new Error(
        key
          ? `a sealed secret did not open under master key version ${version} (nor as one sealed before versions): a damaged value, or another row's`
          : `a secret sealed under master key version ${version}, which MASTER_KEY does not hold (add it to the keyring)`,
      );
    }
  }

  /**
   * A 32-byte key for one purpose (HKDF-SHA256 of the master key), so no two uses share a key;
   * under every version, the current first: sign with the first, accept any.
   */
  deriveKeys(purpose: string): Buffer[] {
    const versions = [...this.ring.keys.keys()].sort((a, b) => b - a);
    return versions.map((v) => derive(this.ring.keys.get(v)!, purpose));
  }
}

function derive(master: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `domain-partner-api:${purpose}`, 32));
}

function decrypt(key: Buffer, body: Buffer, associatedData: string): string {
  const iv = body.subarray(0, IV_BYTES);
  const tag = body.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(body.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}
