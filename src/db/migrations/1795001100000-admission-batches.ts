import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `admit_requests`: the admissions of one batch of signed requests (src/auth/admission.ts) in
 * one statement and one transaction. It decides each request with `admit_request`, in the order
 * given, so that every rule (revocation, crash epoch, replay, scope, GCRA limit) and the order of
 * one credential's requests are exactly those of one request at a time; a later request of the
 * batch sees the nonces and the bucket the earlier ones left.
 *
 * Raw SQL: a plpgsql function, which TypeORM entities do not express.
 */
export class AdmissionBatches1795001100000 implements MigrationInterface {
  name = 'AdmissionBatches1795001100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION admit_requests(p_key_ids text[], p_nonces uuid[], p_scope_ok boolean[],
                                     p_default_rates double precision[], p_burst_multiplier double precision,
                                     p_signed_at bigint[])
      RETURNS TABLE (idx integer, outcome text, retry_after_seconds integer)
      LANGUAGE plpgsql AS $$
      BEGIN
        FOR i IN 1 .. COALESCE(array_length(p_key_ids, 1), 0) LOOP
          RETURN QUERY SELECT i, a.outcome, a.retry_after_seconds
            FROM admit_request(p_key_ids[i], p_nonces[i], p_scope_ok[i], p_default_rates[i], p_burst_multiplier, p_signed_at[i]) a;
        END LOOP;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION admit_requests(text[], uuid[], boolean[], double precision[], double precision, bigint[])`);
  }
}
