import type { MigrationInterface, QueryRunner } from 'typeorm';
import { AdmissionBatches1795001100000 } from './1795001100000-admission-batches';

/**
 * Batches of admissions cannot deadlock one another.
 *
 * `admit_request` inserts a request's nonce (a concurrent insert of the same nonce waits for this
 * transaction) and then locks the credential's bucket row; a batch holds both until it commits.
 * So batch A = [K/N1, K/N2] and batch B = [K/N2] (a replay sent to another process) could each
 * wait for the other: B holds N2 and waits for K's bucket, A holds K's bucket and waits for N2.
 * Now a batch first takes a transaction-scoped advisory lock per distinct key id, in the order of
 * the lock's own number, before deciding anything: two transactions that touch the same key's
 * nonces or bucket hold that key's lock, so neither can wait for the other inside it.
 *
 * Raw SQL: a plpgsql function and advisory locks, which TypeORM entities do not express.
 */
export const ADMISSION_LOCK_SPACE = 804_201;

/** `admit_requests`' signature, as every version of it is declared (CREATE OR REPLACE keeps it). */
export const ADMIT_REQUESTS_SIGNATURE = `admit_requests(p_key_ids text[], p_nonces uuid[], p_scope_ok boolean[],
                                                p_default_rates double precision[], p_burst_multiplier double precision,
                                                p_signed_at bigint[])
      RETURNS TABLE (idx integer, outcome text, retry_after_seconds integer)`;

/** A batch's advisory lock per distinct key, in the order of the locks' numbers (needs `v_lock integer`). */
export const LOCK_BATCH_KEYS = `FOR v_lock IN SELECT DISTINCT hashtext(k) FROM unnest(p_key_ids) AS k ORDER BY 1 LOOP
          PERFORM pg_advisory_xact_lock(${ADMISSION_LOCK_SPACE}, v_lock);
        END LOOP;`;

export class AdmissionLockOrder1795001200000 implements MigrationInterface {
  name = 'AdmissionLockOrder1795001200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION ${ADMIT_REQUESTS_SIGNATURE}
      LANGUAGE plpgsql AS $$
      DECLARE
        v_lock integer;
      BEGIN
        ${LOCK_BATCH_KEYS}
        FOR i IN 1 .. COALESCE(array_length(p_key_ids, 1), 0) LOOP
          RETURN QUERY SELECT i, a.outcome, a.retry_after_seconds
            FROM admit_request(p_key_ids[i], p_nonces[i], p_scope_ok[i], p_default_rates[i], p_burst_multiplier, p_signed_at[i]) a;
        END LOOP;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    // The admission-batches migration's version: no advisory locks.
    await q.query(`DROP FUNCTION admit_requests(text[], uuid[], boolean[], double precision[], double precision, bigint[])`);
    await new AdmissionBatches1795001100000().up(q);
  }
}
