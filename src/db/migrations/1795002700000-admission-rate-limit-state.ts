import type { MigrationInterface, QueryRunner } from 'typeorm';
import { AdmissionInline1795001300000 } from './1795001300000-admission-inline';
import { LOCK_BATCH_KEYS } from './1795001200000-admission-lock-order';

const ARGUMENTS = 'text[], uuid[], boolean[], double precision[], double precision, bigint[]';

/** `admit_requests` answering, beside each outcome, what is left of the credential's bucket. */
const SIGNATURE = `admit_requests(p_key_ids text[], p_nonces uuid[], p_scope_ok boolean[],
                                 p_default_rates double precision[], p_burst_multiplier double precision,
                                 p_signed_at bigint[])
      RETURNS TABLE (idx integer, outcome text, retry_after_seconds integer, remaining integer, reset_seconds integer)`;

/**
 * Every signed answer carries the IETF rate-limit fields (CONTRACT §14, `RateLimit` and
 * `RateLimit-Policy`): admission answers what is left of the credential's burst after this request
 * (`remaining`) and the seconds until its bucket is full again (`reset_seconds`), for an admitted
 * or a rate-limited request (null otherwise). The same decisions as before, in the same order
 * (admission-inline); only the bucket's new TAT is read back with RETURNING.
 *
 * Raw SQL: a plpgsql function, which TypeORM entities do not express; a new result column needs
 * DROP and CREATE.
 */
export class AdmissionRateLimitState1795002700000 implements MigrationInterface {
  name = 'AdmissionRateLimitState1795002700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION admit_requests(${ARGUMENTS})`);
    await q.query(admitRequestsFunction('CREATE', NEAREST_MICROSECOND_INTERVAL));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION admit_requests(${ARGUMENTS})`);
    await new AdmissionInline1795001300000().up(q);
  }
}

/** The interval between two tokens as this migration made it: 1 s / rate, to the nearest microsecond. */
export const NEAREST_MICROSECOND_INTERVAL = 'make_interval(secs => 1 / v_rate)';

/**
 * This migration's `admit_requests`, with `interval` the SQL expression of the time between two
 * tokens (of `v_rate`, tokens a second): later migrations change only that (admission-whole-burst).
 */
export function admitRequestsFunction(create: 'CREATE' | 'CREATE OR REPLACE', interval: string): string {
  return `
      ${create} FUNCTION ${SIGNATURE}
      LANGUAGE plpgsql AS $$
      DECLARE
        v_lock integer;
        v_now timestamptz;
        v_epoch timestamptz;
        v_epoch_second bigint;
        v_window interval := make_interval(secs => p_burst_multiplier);
        v_key text;
        v_nonce uuid;
        v_rate double precision;
        v_revoked boolean;
        v_interval interval;
        v_tat timestamptz;
      BEGIN
        ${LOCK_BATCH_KEYS}
        v_now := clock_timestamp();
        SELECT e.started_at INTO v_epoch FROM admission_epoch e;
        IF NOT FOUND THEN
          -- Crash recovery emptied the unlogged tables: nonces signed before now may be forgotten.
          INSERT INTO admission_epoch (started_at) VALUES (v_now) ON CONFLICT DO NOTHING;
          SELECT e.started_at INTO v_epoch FROM admission_epoch e;
        END IF;
        v_epoch_second := CASE WHEN v_epoch > '-infinity' THEN CEIL(EXTRACT(EPOCH FROM v_epoch))::bigint END;
        FOR i IN 1 .. COALESCE(array_length(p_key_ids, 1), 0) LOOP
          idx := i;
          retry_after_seconds := 0;
          remaining := NULL;
          reset_seconds := NULL;
          v_key := p_key_ids[i];
          v_nonce := p_nonces[i];
          IF i = 1 OR v_key IS DISTINCT FROM p_key_ids[i - 1] OR p_default_rates[i] IS DISTINCT FROM p_default_rates[i - 1] THEN
            SELECT COALESCE(c.rate_limit_per_second, p_default_rates[i]), c.revoked_at IS NOT NULL INTO v_rate, v_revoked
              FROM credentials c WHERE c.key_id = v_key;
            IF NOT FOUND THEN v_revoked := true; END IF;
          END IF;
          IF v_revoked THEN
            outcome := 'revoked';
          ELSIF p_signed_at[i] < v_epoch_second THEN
            outcome := 'signed_before_restart';
          ELSIF EXISTS (SELECT 1 FROM request_nonces n WHERE n.key_id = v_key AND n.nonce = v_nonce) THEN
            -- Read-only, so that a replay outranks a missing scope without a forbidden request writing.
            outcome := 'replayed';
          ELSIF NOT p_scope_ok[i] THEN
            outcome := 'forbidden';
          ELSE
            v_interval := ${interval};
            INSERT INTO request_nonces (key_id, nonce, seen_at) VALUES (v_key, v_nonce, v_now) ON CONFLICT DO NOTHING;
            IF NOT FOUND THEN
              outcome := 'replayed';
            ELSE
              INSERT INTO rate_limit_buckets AS b (key_id, tat) VALUES (v_key, v_now + v_interval)
                ON CONFLICT (key_id) DO UPDATE SET tat = GREATEST(b.tat, v_now) + v_interval
                  WHERE GREATEST(b.tat, v_now) + v_interval <= v_now + v_window
                RETURNING b.tat INTO v_tat;
              IF FOUND THEN
                outcome := 'admitted';
                -- What is left of the burst, and when the bucket is full again (RateLimit header).
                remaining := FLOOR(EXTRACT(EPOCH FROM (v_now + v_window - v_tat)) * v_rate + 1e-9)::integer;
                reset_seconds := CEIL(EXTRACT(EPOCH FROM (v_tat - v_now)))::integer;
              ELSE
                -- Never visible to anyone: deleted before this transaction commits.
                DELETE FROM request_nonces n WHERE n.key_id = v_key AND n.nonce = v_nonce;
                SELECT b.tat INTO v_tat FROM rate_limit_buckets b WHERE b.key_id = v_key;
                outcome := 'rate_limited';
                retry_after_seconds := GREATEST(1, CEIL(EXTRACT(EPOCH FROM (GREATEST(v_tat, v_now) + v_interval - v_window - v_now))))::integer;
                remaining := 0;
                reset_seconds := CEIL(EXTRACT(EPOCH FROM (GREATEST(v_tat, v_now) - v_now)))::integer;
              END IF;
            END IF;
          END IF;
          RETURN NEXT;
        END LOOP;
      END $$`;
}
