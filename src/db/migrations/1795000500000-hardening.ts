import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Two promises kept by the database itself rather than by the code that calls it.
 *
 * `admit_request` (first in the foundation migration) recorded a request's nonce before looking
 * at its scope, so a 403 used up the nonce and created the rate-limit bucket. Now a forbidden
 * request writes nothing (CONTRACT §1: a rejected request changes nothing). The order of
 * outcomes stays revoked, replayed (401), forbidden (403), rate limited (429): a nonce already
 * seen is looked up before the scope, without writing, so a replay is still a 401.
 *
 * `ledger_entries` was append-only through rules that turned UPDATE and DELETE into nothing,
 * silently: code that tried would believe it had succeeded. Triggers now refuse UPDATE, DELETE
 * and TRUNCATE with an error; a correction is a reversing entry.
 */
export class Hardening1795000500000 implements MigrationInterface {
  name = 'Hardening1795000500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION admit_request(p_key_id text, p_nonce uuid, p_scope_ok boolean,
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
        -- Read-only, so that a replay outranks a missing scope without a forbidden request writing.
        IF EXISTS (SELECT 1 FROM request_nonces n WHERE n.key_id = p_key_id AND n.nonce = p_nonce) THEN
          RETURN QUERY SELECT 'replayed'::text, 0; RETURN;
        END IF;
        IF NOT p_scope_ok THEN
          RETURN QUERY SELECT 'forbidden'::text, 0; RETURN;
        END IF;
        v_capacity := v_rate * p_burst_multiplier;
        INSERT INTO rate_limit_buckets (key_id, tokens, updated_at) VALUES (p_key_id, v_capacity, clock_timestamp())
          ON CONFLICT (key_id) DO NOTHING;
        -- The bucket row lock serialises the credential's requests from here on.
        SELECT b.tokens, b.updated_at INTO v_tokens, v_updated
          FROM rate_limit_buckets b WHERE b.key_id = p_key_id FOR UPDATE;
        v_now := clock_timestamp();
        v_tokens := LEAST(v_capacity, v_tokens + GREATEST(0, EXTRACT(EPOCH FROM (v_now - v_updated))) * v_rate);
        -- The insert, not the lookup above, is what makes two concurrent uses of a nonce one replay.
        INSERT INTO request_nonces (key_id, nonce, seen_at) VALUES (p_key_id, p_nonce, v_now)
          ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
          RETURN QUERY SELECT 'replayed'::text, 0; RETURN;
        END IF;
        IF v_tokens < 1 THEN
          DELETE FROM request_nonces WHERE key_id = p_key_id AND nonce = p_nonce;
          RETURN QUERY SELECT 'rate_limited'::text, GREATEST(1, CEIL((1 - v_tokens) / v_rate))::integer; RETURN;
        END IF;
        UPDATE rate_limit_buckets SET tokens = v_tokens - 1, updated_at = v_now WHERE key_id = p_key_id;
        RETURN QUERY SELECT 'admitted'::text, 0;
      END $$`);

    await q.query(`DROP RULE ledger_entries_no_update ON ledger_entries`);
    await q.query(`DROP RULE ledger_entries_no_delete ON ledger_entries`);
    await q.query(`
      CREATE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'ledger_entries is append-only: % refused; book a reversing entry instead', TG_OP
          USING ERRCODE = 'restrict_violation';
      END $$`);
    await q.query(`
      CREATE TRIGGER ledger_entries_no_update_or_delete BEFORE UPDATE OR DELETE ON ledger_entries
        FOR EACH ROW EXECUTE FUNCTION ledger_entries_append_only()`);
    // TRUNCATE fires no row triggers: only a statement trigger sees it.
    await q.query(`
      CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_append_only()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER ledger_entries_no_truncate ON ledger_entries`);
    await q.query(`DROP TRIGGER ledger_entries_no_update_or_delete ON ledger_entries`);
    await q.query(`DROP FUNCTION ledger_entries_append_only()`);
    await q.query(`
      CREATE RULE ledger_entries_no_update AS ON UPDATE TO ledger_entries DO INSTEAD NOTHING;
      CREATE RULE ledger_entries_no_delete AS ON DELETE TO ledger_entries DO INSTEAD NOTHING`);
    // The foundation's version: the nonce recorded before the scope is checked.
    await q.query(`
      CREATE OR REPLACE FUNCTION admit_request(p_key_id text, p_nonce uuid, p_scope_ok boolean,
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
}
