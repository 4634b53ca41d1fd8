/**
 * Quote tokens: a compact JWS (EdDSA over Ed25519) that a partner can verify offline against the
 * public keys published at GET /api/partner/v1/quote-keys (a JWKS). Claims: `sub` quote id,
 * `domain`, `price_cents`, `currency`, `env`, `iat`, `exp` (the end of the reservation).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, SignJWT, type JWK } from 'jose';

export const QUOTE_TOKEN_ISSUER = 'domain-partner-api';

export interface QuoteClaims {
  quoteId: string;
  domain: string;
  priceCents: number;
  currency: string;
  environment: string;
  partnerId: string;
  issuedAt: Date;
  expiresAt: Date;
}

export class QuoteTokenSigner {
  private jwk?: JWK & { kid: string };

  private constructor(private readonly privateKey: KeyObject, private readonly publicKey: KeyObject) {}

  /** From a PKCS#8 PEM Ed25519 private key. */
  static fromPem(pem: string): QuoteTokenSigner {
    const privateKey = createPrivateKey(pem);
    if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('the quote signing key must be Ed25519');
    return new QuoteTokenSigner(privateKey, createPublicKey(privateKey));
  }

  static generatePem(): string {
    return generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  }

  async publicJwk(): Promise<JWK & { kid: string }> {
    if (!this.jwk) {
      const jwk = await exportJWK(this.publicKey);
      this.jwk = { ...jwk, kid: await calculateJwkThumbprint(jwk), alg: 'EdDSA', use: 'sig' };
    }
    return this.jwk;
  }

  async sign(claims: QuoteClaims): Promise<string> {
    const { kid } = await this.publicJwk();
    return new SignJWT({ domain: claims.domain, price_cents: claims.priceCents, currency: claims.currency, env: claims.environment, partner_id: claims.partnerId })
      .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'quote+jwt' })
      .setIssuer(QUOTE_TOKEN_ISSUER)
      .setSubject(claims.quoteId)
      .setIssuedAt(Math.floor(claims.issuedAt.getTime() / 1000))
      .setExpirationTime(Math.floor(claims.expiresAt.getTime() / 1000))
      .sign(this.privateKey);
  }
}
