import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sales paid before the card processor's record and the ledger's card money existed (before
 * CardPayments1795002100000's release) keep every cent through the upgrade (issue: money, round
 * four). What the data can tell is backfilled, once (each insert skips what exists):
 * - each such payment's `card_payment` posting (`service_cash` +A, `buyer_payments` −A, at the
 *   payment's time), which every later payment books when it is recorded;
 * - for a sandbox payment, the sandbox processor's record of the charge it approved (by the
 *   payment's reference), so that a refund or a failed transfer of the sale refunds it by that
 *   reference as the processor would, and reconcile finds the processor's record to compare.
 * A refunded or failed sale among them then has its buyer refunded by the recovery sweep
 * (unrefundedBuyers). Their commission was booked payable at the sale by that release (no
 * pending entry), so no window applies to them.
 *
 * Raw SQL: a data backfill of rows written before the entities that now write them existed; the
 * ledger's deferred balance check holds (each posting's two entries sum to zero).
 */
export class LegacyCardPayments1795003000000 implements MigrationInterface {
  name = 'LegacyCardPayments1795003000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      WITH legacy AS (
        SELECT cp.payment_ref, cp.amount_cents, cp.currency, cp.created_at, s.partner_id, s.environment
        FROM checkout_payments cp
        JOIN checkout_sessions s ON s.id = cp.session_id
        WHERE NOT EXISTS (SELECT 1 FROM ledger_postings p WHERE p.idempotency_key = 'card:' || cp.payment_ref || ':paid')
      ), posted AS (
        INSERT INTO ledger_postings (idempotency_key, partner_id, environment, kind, payment_model, transaction_id, period_start, occurred_at)
        SELECT 'card:' || payment_ref || ':paid', partner_id, environment, 'card_payment', 'service_collected', NULL,
               date_trunc('month', created_at AT TIME ZONE 'UTC')::date, created_at
        FROM legacy
        RETURNING id, idempotency_key, partner_id, environment
      )
      INSERT INTO ledger_entries (posting_id, partner_id, environment, transaction_id, account, amount_cents, currency)
      SELECT posted.id, posted.partner_id, posted.environment, NULL, side.account, side.sign * legacy.amount_cents, legacy.currency
      FROM posted
      JOIN legacy ON 'card:' || legacy.payment_ref || ':paid' = posted.idempotency_key
      CROSS JOIN (VALUES ('service_cash', 1), ('buyer_payments', -1)) AS side (account, sign)
      WHERE legacy.amount_cents <> 0`);
    await q.query(`
      INSERT INTO sandbox_card_charges (idempotency_key, payment_ref, status, amount_cents, currency, card_last4, created_at)
      SELECT 'legacy:' || cp.payment_ref, cp.payment_ref, 'approved', cp.amount_cents, cp.currency, cp.card_last4, cp.created_at
      FROM checkout_payments cp
      JOIN checkout_sessions s ON s.id = cp.session_id
      WHERE s.environment = 'sandbox' AND NOT EXISTS (SELECT 1 FROM sandbox_card_charges c WHERE c.payment_ref = cp.payment_ref)`);
  }

  async down(): Promise<void> {
    // The backfilled rows are the ledger's and the processor's record now: nothing to undo.
  }
}
