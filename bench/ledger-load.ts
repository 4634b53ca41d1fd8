/**
 * The data behind `npm run bench:ledger`: a year of one partner's completed sales, loaded with
 * set-based SQL, and the pending orders the completion benchmark books.
 *
 * Raw SQL on purpose: it is a benchmark's data loader, the only way to write a million sales in
 * minutes rather than hours. It writes what the real path writes for each sale (order, the
 * transaction, its balanced sale posting with 3 or 4 entries, and for 2% of sales a reversing
 * posting in the month of the reversal), so the ledger reconciles: the deferred balance trigger
 * checks every posting at each chunk's commit and the append-only triggers stay on. Order
 * timelines and events are not written (GET /transactions does not read them). Past months are
 * then closed by the real month-end step, as the finance:month-end workflow would have.
 */
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { Domain } from '../src/db/entities/domain';
import { Order } from '../src/db/entities/order';
import type { Partner } from '../src/db/entities/partner';
import { closeSettlements } from '../src/finance/settlements';
import { periodStartOf } from '../src/finance/periods';

/** Sales per chunk: one statement and one commit (and its deferred balance checks) per chunk. */
const CHUNK = 100_000;

/**
 * One chunk of sales i in [lo, hi] of n, spread evenly over the year before `anchor`, newest
 * last. Deterministic from i: 60% partner-collected, 40% service-collected (orders allow no
 * other model), gross $10–$5,000, every 50th sale reversed 1–20 days later (never after
 * anchor). Ids are derived from the partner and i, so the statements below can join on them.
 */
const LOAD_CHUNK = `
WITH g AS MATERIALIZED (
  SELECT i,
         md5('order:' || $1::text || ':' || i)::uuid AS order_id,
         md5('txn:' || $1::text || ':' || i)::uuid AS txn_id,
         substr(md5('pub:' || $1::text || ':' || i), 1, 20) AS pub,
         CASE WHEN i % 5 < 3 THEN 'partner_collected' ELSE 'service_collected' END AS model,
         CASE WHEN i % 5 < 3 THEN $7::int ELSE $8::int END AS bps,
         1000 + (i * 2654435761) % 499001 AS gross,
         $6::timestamptz - make_interval(secs => ($5::bigint - i) * 31536000.0 / $5::bigint) AS at,
         i % 50 = 7 AS reversed
  FROM generate_series($3::bigint, $4::bigint) AS i
), s AS MATERIALIZED (
  SELECT g.*, (gross * bps) / 10000 AS commission,
         CASE WHEN reversed THEN least(at + make_interval(days => (1 + (i % 20))::int), $6::timestamptz) END AS reversed_at
  FROM g
), o AS (
  INSERT INTO orders (id, public_id, partner_id, environment, quote_id, domain_id, domain, sale_price_cents, currency,
                      external_payment_ref, payment_model, commission_bps, status, failure_reason, workflow_started, created_at, updated_at)
  SELECT order_id, 'ord_bench' || pub, $1::uuid, 'sandbox', NULL, $2::uuid, 'bench-' || i || '.com', gross, 'USD',
         'pay_bench_' || i, model, bps, 'TRANSFER_COMPLETED', NULL, true, at - interval '3 days', at
  FROM s RETURNING 1
), t AS (
  INSERT INTO transactions (id, public_id, partner_id, environment, order_id, domain, payment_model, gross_cents, commission_cents,
                            currency, occurred_at, status, reversed_at)
  SELECT txn_id, 'txn_bench' || pub, $1::uuid, 'sandbox', order_id, 'bench-' || i || '.com', model, gross, commission,
         'USD', at, CASE WHEN reversed THEN 'reversed' ELSE 'completed' END, reversed_at
  FROM s RETURNING 1
), p AS (
  INSERT INTO ledger_postings (idempotency_key, partner_id, environment, kind, payment_model, transaction_id, period_start, occurred_at, created_at)
  SELECT 'order:' || order_id || ':completed', $1::uuid, 'sandbox', 'sale', model, txn_id,
         date_trunc('month', at AT TIME ZONE 'UTC')::date, at, at
  FROM s
  UNION ALL
  SELECT 'transaction:' || txn_id || ':reversed', $1::uuid, 'sandbox', 'reversal', model, txn_id,
         date_trunc('month', reversed_at AT TIME ZONE 'UTC')::date, reversed_at, reversed_at
  FROM s WHERE reversed
  RETURNING id, transaction_id, kind, occurred_at
)
INSERT INTO ledger_entries (posting_id, partner_id, environment, transaction_id, account, amount_cents, currency, created_at)
SELECT p.id, $1::uuid, 'sandbox', p.transaction_id, e.account, CASE WHEN p.kind = 'reversal' THEN -e.amount ELSE e.amount END, 'USD', p.occurred_at
FROM p
JOIN s ON s.txn_id = p.transaction_id
CROSS JOIN LATERAL (
  SELECT * FROM (VALUES
    ('sales', -s.gross, true),
    ('partner_owes_service', s.gross - s.commission, s.model = 'partner_collected'),
    ('partner_commission_retained', s.commission, s.model = 'partner_collected'),
    ('buyer_payments', s.gross, s.model = 'service_collected'),
    ('partner_commission_expense', s.commission, s.model = 'service_collected'),
    ('service_owes_partner', -s.commission, s.model = 'service_collected')
  ) AS v(account, amount, applies)
  WHERE v.applies AND v.amount <> 0
) AS e`;

/** Loads `n` sales of `partner` ending at `anchor`; `progress` hears after each chunk. */
export async function loadSales(dataSource: DataSource, partner: Partner, domainId: string, n: number, anchor: Date, progress: (done: number) => void): Promise<void> {
  for (let lo = 1; lo <= n; lo += CHUNK) {
    const hi = Math.min(n, lo + CHUNK - 1);
    await dataSource.transaction(async (tx) => {
      // The chunk's sorts and CTEs in memory rather than in temp files.
      await tx.query(`SET LOCAL work_mem = '256MB'`);
      await tx.query(LOAD_CHUNK, [partner.id, domainId, lo, hi, n, anchor.toISOString(), partner.commissionPartnerCollectedBps, partner.commissionServiceCollectedBps]);
    });
    progress(hi);
  }
  // The periods the postings went into, then the month-end close of every month before the anchor's.
  await dataSource.query(
    `INSERT INTO settlements (public_id, partner_id, environment, period_start, period_end, currency, status)
     SELECT 'stl_bench' || substr(md5(p.period_start::text || $1::text), 1, 20), $1::uuid, 'sandbox', p.period_start,
            (p.period_start + interval '1 month - 1 day')::date, 'USD', 'open'
     FROM (SELECT DISTINCT period_start FROM ledger_postings WHERE partner_id = $1::uuid) p
     ON CONFLICT DO NOTHING`,
    [partner.id],
  );
  await closeSettlements(dataSource, periodStartOf(anchor));
  // As autovacuum would leave the tables: statistics, visibility map and hint bits set, so
  // neither the endpoint nor the bare query pays for the load's first reads.
  for (const table of ['orders', 'transactions', 'ledger_postings', 'ledger_entries', 'settlements']) await dataSource.query(`VACUUM (ANALYZE) ${table}`);
}

/** `count` orders of `partner` waiting at TRANSFER_PENDING, as fulfilment leaves them before completion. */
export async function pendingOrders(dataSource: DataSource, partner: Partner, domainId: string, count: number): Promise<string[]> {
  const orders = dataSource.getRepository(Order);
  const ids: string[] = [];
  for (let i = 0; i < count; i += 500) {
    const batch = Array.from({ length: Math.min(500, count - i) }, (_, j) => {
      const tag = randomUUID().replace(/-/g, '').slice(0, 16);
      return orders.create({
        publicId: `ord_bench${tag}`,
        partnerId: partner.id,
        environment: 'sandbox',
        quoteId: null,
        domainId,
        domain: `pending-${tag}.com`,
        salePriceCents: 10_000 + ((i + j) % 97) * 1_000,
        currency: 'USD',
        externalPaymentRef: `pay_bench_${tag}`,
        paymentModel: (i + j) % 5 < 3 ? 'partner_collected' : 'service_collected',
        commissionBps: (i + j) % 5 < 3 ? partner.commissionPartnerCollectedBps : partner.commissionServiceCollectedBps,
        status: 'TRANSFER_PENDING',
        failureReason: null,
        workflowStarted: true,
      });
    });
    const result = await orders.insert(batch);
    ids.push(...result.identifiers.map((r) => r.id as string));
  }
  return ids;
}

/** The domain every loaded order points at (orders need one; which one does not matter here). */
export async function anyDomainId(dataSource: DataSource): Promise<string> {
  return (await dataSource.getRepository(Domain).findOneByOrFail({ environment: 'sandbox', name: 'academy.com' })).id;
}
