import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Partners, credentials, replay protection, rate limiting and the domain inventory.
 *
 * `admit_request` decides, in one round trip and under a per-credential row lock, everything
 * about a request whose signature the API has already checked: revoked credential, nonce replay,
 * missing scope, rate limit. It keeps CONTRACT §1–2's promises: a replayed or rate-limited
 * request changes nothing (the nonce of a rate-limited request is given back), and every API
 * process sharing the database sees the same nonces and the same token bucket.
 */
export class Foundation1795000000000 implements MigrationInterface {
  name = 'Foundation1795000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);
    await q.query(`
      CREATE TABLE partners (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL UNIQUE,
        merchant_of_record boolean NOT NULL DEFAULT true,
        commission_partner_collected_bps integer NOT NULL CHECK (commission_partner_collected_bps BETWEEN 0 AND 10000),
        commission_service_collected_bps integer NOT NULL CHECK (commission_service_collected_bps BETWEEN 0 AND 10000),
        commission_brokerage_bps integer NOT NULL CHECK (commission_brokerage_bps BETWEEN 0 AND 10000),
        affiliate_account_id text UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE credentials (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        key_id text NOT NULL UNIQUE,
        partner_id uuid NOT NULL REFERENCES partners(id) ON DELETE RESTRICT,
        environment text NOT NULL CHECK (environment IN ('sandbox', 'live')),
        scopes text[] NOT NULL,
        secret_sealed bytea NOT NULL,
        rate_limit_per_second double precision CHECK (rate_limit_per_second > 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz,
        CHECK ((environment = 'sandbox' AND key_id LIKE 'pk\\_test\\_%') OR (environment = 'live' AND key_id LIKE 'pk\\_live\\_%'))
      )`);
    await q.query(`CREATE INDEX credentials_partner_idx ON credentials (partner_id)`);
    await q.query(`
      CREATE TABLE request_nonces (
        key_id text NOT NULL,
        nonce uuid NOT NULL,
        seen_at timestamptz NOT NULL,
        PRIMARY KEY (key_id, nonce)
      )`);
    await q.query(`CREATE INDEX request_nonces_seen_at_idx ON request_nonces (seen_at)`);
    await q.query(`
      CREATE TABLE rate_limit_buckets (
        key_id text PRIMARY KEY,
        tokens double precision NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`
      CREATE TABLE domains (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        environment text NOT NULL CHECK (environment IN ('sandbox', 'live')),
        name text NOT NULL CHECK (name = lower(name)),
        label text NOT NULL,
        tld text NOT NULL,
        category text NOT NULL,
        buy_now_price_cents bigint NOT NULL CHECK (buy_now_price_cents >= 0),
        floor_price_cents bigint NOT NULL CHECK (floor_price_cents >= 0),
        currency char(3) NOT NULL,
        status text NOT NULL CHECK (status IN ('listed', 'unlisted', 'reserved', 'sold')),
        active_site boolean NOT NULL DEFAULT false,
        registered_year integer,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        search_document tsvector GENERATED ALWAYS AS (
          to_tsvector('english', label || ' ' || replace(category, '-', ' '))
        ) STORED,
        UNIQUE (environment, name)
      )`);
    await q.query(`CREATE INDEX domains_label_trgm_idx ON domains USING gin (label gin_trgm_ops)`);
    await q.query(`CREATE INDEX domains_search_document_idx ON domains USING gin (search_document)`);
    await q.query(`
      CREATE FUNCTION admit_request(p_key_id text, p_nonce uuid, p_scope_ok boolean,
                                    p_default_rate double precision, p_burst_multiplier double precision)
      RETURNS TABLE (outcome text, retry_after_seconds integer)
      LANGUAGE plpgsql AS $$
      DECLARE
        v_rate double precision;
        v_revoked timestamptz;
        v_capacity double precision;
        v_tokens double precision;
        v_updated timestamptz;
        v_now timestamptz;
      BEGIN
        SELECT COALESCE(c.rate_limit_per_second, p_default_rate), c.revoked_at INTO v_rate, v_revoked
          FROM credentials c WHERE c.key_id = p_key_id;
        IF NOT FOUND OR v_revoked IS NOT NULL THEN
          RETURN QUERY SELECT 'revoked'::text, 0; RETURN;
        END IF;
        v_capacity := v_rate * p_burst_multiplier;
        INSERT INTO rate_limit_buckets (key_id, tokens, updated_at) VALUES (p_key_id, v_capacity, clock_timestamp())
          ON CONFLICT (key_id) DO NOTHING;
        SELECT b.tokens, b.updated_at INTO v_tokens, v_updated
          FROM rate_limit_buckets b WHERE b.key_id = p_key_id FOR UPDATE;
        v_now := clock_timestamp();
        v_tokens := LEAST(v_capacity, v_tokens + GREATEST(0, EXTRACT(EPOCH FROM (v_now - v_updated))) * v_rate);
        INSERT INTO request_nonces (key_id, nonce, seen_at) VALUES (p_key_id, p_nonce, v_now)
          ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
          RETURN QUERY SELECT 'replayed'::text, 0; RETURN;
        END IF;
        IF NOT p_scope_ok THEN
          RETURN QUERY SELECT 'forbidden'::text, 0; RETURN;
        END IF;
        IF v_tokens < 1 THEN
          DELETE FROM request_nonces WHERE key_id = p_key_id AND nonce = p_nonce;
          RETURN QUERY SELECT 'rate_limited'::text, GREATEST(1, CEIL((1 - v_tokens) / v_rate))::integer; RETURN;
        END IF;
        UPDATE rate_limit_buckets SET tokens = v_tokens - 1, updated_at = v_now WHERE key_id = p_key_id;
        RETURN QUERY SELECT 'admitted'::text, 0;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION admit_request(text, uuid, boolean, double precision, double precision)`);
    await q.query(`DROP TABLE domains`);
    await q.query(`DROP TABLE rate_limit_buckets`);
    await q.query(`DROP TABLE request_nonces`);
    await q.query(`DROP TABLE credentials`);
    await q.query(`DROP TABLE partners`);
  }
}
