import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Admission without a lock held across a disk flush.
 *
 * Measured before (bench/RESULTS.md): every signed request ran `admit_request`, which locked
 * the credential's bucket row, wrote the nonce and the bucket to logged tables and then held the
 * lock through its commit's WAL flush, so one credential's requests went through Postgres one
 * flush at a time. Now:
 *
 * - `request_nonces` and `rate_limit_buckets` are UNLOGGED: their writes make no WAL, so an
 *   admission commits without waiting for a flush and the bucket row lock lasts microseconds.
 * - The bucket is a GCRA "theoretical arrival time" (`tat`), updated by one conditional upsert
 *   taken last, after the nonce insert; the same limit as the token bucket it replaces
 *   (capacity rate × burst multiplier, refilled at rate), so a request passes when
 *   `greatest(tat, now) + 1/rate <= now + burst_multiplier seconds`.
 * - Crash recovery empties unlogged tables (and a promoted standby has none of their rows), which
 *   would forget the nonces of the last 300 s. `admission_epoch`, unlogged too, holds one row
 *   that recovery empties with them: when it is missing, admission records "now" as the epoch and
 *   from then on refuses any request signed before that second (401). Such a request is either a
 *   replay candidate or a legitimate one sent across the crash, which its client re-signs. Every
 *   nonce the database may have forgotten belongs to a request signed before the epoch, so
 *   replay protection is as strong as before; the buckets restart full (at most one burst more).
 *
 * Raw SQL: UNLOGGED tables and the plpgsql admission are Postgres features TypeORM entities do not express.
 */
export class HotPath1795001000000 implements MigrationInterface {
  name = 'HotPath1795001000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION admit_request(text, uuid, boolean, double precision, double precision)`);
    await q.query(`ALTER TABLE request_nonces SET UNLOGGED`);
    // Token counts do not convert to a tat without each credential's rate; a bucket refills in two seconds anyway.
    await q.query(`DROP TABLE rate_limit_buckets`);
    await q.query(`CREATE UNLOGGED TABLE rate_limit_buckets (key_id text PRIMARY KEY, tat timestamptz NOT NULL)`);
    await q.query(`
      CREATE UNLOGGED TABLE admission_epoch (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        started_at timestamptz NOT NULL
      )`);
    // The nonces were carried over by SET UNLOGGED: nothing is forgotten, so no request is refused for its age.
    await q.query(`INSERT INTO admission_epoch (started_at) VALUES ('-infinity')`);
    await q.query(`
      CREATE FUNCTION admit_request(p_key_id text, p_nonce uuid, p_scope_ok boolean,
                                    p_default_rate double precision, p_burst_multiplier double precision,
                                    p_signed_at bigint)
      RETURNS TABLE (outcome text, retry_after_seconds integer)
      LANGUAGE plpgsql AS $$
      DECLARE
        v_rate double precision;
        v_revoked timestamptz;
        v_epoch timestamptz;
        v_now timestamptz := clock_timestamp();
        v_interval interval;
        v_window interval;
        v_tat timestamptz;
      BEGIN
        SELECT COALESCE(c.rate_limit_per_second, p_default_rate), c.revoked_at INTO v_rate, v_revoked
          FROM credentials c WHERE c.key_id = p_key_id;
        IF NOT FOUND OR v_revoked IS NOT NULL THEN
          RETURN QUERY SELECT 'revoked'::text, 0; RETURN;
        END IF;
        SELECT e.started_at INTO v_epoch FROM admission_epoch e;
        IF NOT FOUND THEN
          -- Crash recovery emptied the unlogged tables: nonces signed before now may be forgotten.
          INSERT INTO admission_epoch (started_at) VALUES (v_now) ON CONFLICT DO NOTHING;
          SELECT e.started_at INTO v_epoch FROM admission_epoch e;
        END IF;
        IF v_epoch > '-infinity' AND p_signed_at < CEIL(EXTRACT(EPOCH FROM v_epoch)) THEN
          RETURN QUERY SELECT 'signed_before_restart'::text, 0; RETURN;
        END IF;
        -- Read-only, so that a replay outranks a missing scope without a forbidden request writing.
        IF EXISTS (SELECT 1 FROM request_nonces n WHERE n.key_id = p_key_id AND n.nonce = p_nonce) THEN
          RETURN QUERY SELECT 'replayed'::text, 0; RETURN;
        END IF;
        IF NOT p_scope_ok THEN
          RETURN QUERY SELECT 'forbidden'::text, 0; RETURN;
        END IF;
        -- The insert is what makes two concurrent uses of a nonce one replay (the second waits for the first to commit).
        INSERT INTO request_nonces (key_id, nonce, seen_at) VALUES (p_key_id, p_nonce, v_now) ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
          RETURN QUERY SELECT 'replayed'::text, 0; RETURN;
        END IF;
        v_interval := make_interval(secs => 1 / v_rate);
        v_window := make_interval(secs => p_burst_multiplier);
        -- Last, so the bucket row is locked only from here to the commit, which waits for no flush.
        INSERT INTO rate_limit_buckets AS b (key_id, tat) VALUES (p_key_id, v_now + v_interval)
          ON CONFLICT (key_id) DO UPDATE SET tat = GREATEST(b.tat, v_now) + v_interval
            WHERE GREATEST(b.tat, v_now) + v_interval <= v_now + v_window
          RETURNING b.tat INTO v_tat;
        IF NOT FOUND THEN
          -- Never visible to anyone: deleted before this transaction commits.
          DELETE FROM request_nonces n WHERE n.key_id = p_key_id AND n.nonce = p_nonce;
          SELECT b.tat INTO v_tat FROM rate_limit_buckets b WHERE b.key_id = p_key_id;
          RETURN QUERY SELECT 'rate_limited'::text,
            GREATEST(1, CEIL(EXTRACT(EPOCH FROM (GREATEST(v_tat, v_now) + v_interval - v_window - v_now))))::integer;
          RETURN;
        END IF;
        RETURN QUERY SELECT 'admitted'::text, 0;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION admit_request(text, uuid, boolean, double precision, double precision, bigint)`);
    await q.query(`DROP TABLE admission_epoch`);
    await q.query(`DROP TABLE rate_limit_buckets`);
    await q.query(`CREATE TABLE rate_limit_buckets (key_id text PRIMARY KEY, tokens double precision NOT NULL, updated_at timestamptz NOT NULL)`);
    await q.query(`ALTER TABLE request_nonces SET LOGGED`);
    // The hardening migration's version.
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
        IF EXISTS (SELECT 1 FROM request_nonces n WHERE n.key_id = p_key_id AND n.nonce = p_nonce) THEN
          RETURN QUERY SELECT 'replayed'::text, 0; RETURN;
        END IF;
        IF NOT p_scope_ok THEN
          RETURN QUERY SELECT 'forbidden'::text, 0; RETURN;
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
        IF v_tokens < 1 THEN
          DELETE FROM request_nonces WHERE key_id = p_key_id AND nonce = p_nonce;
          RETURN QUERY SELECT 'rate_limited'::text, GREATEST(1, CEIL((1 - v_tokens) / v_rate))::integer; RETURN;
        END IF;
        UPDATE rate_limit_buckets SET tokens = v_tokens - 1, updated_at = v_now WHERE key_id = p_key_id;
        RETURN QUERY SELECT 'admitted'::text, 0;
      END $$`);
  }
}
