/**
 * Payouts (CONTRACT §8): what the service owes a partner (commissions on service-collected sales,
 * brokerage shares; referral commissions later) is paid by a payout run. A payout is its lines:
 * each line is one posting whose `service_owes_partner` credit it pays, a posting at most once
 * (unique line), so a retried or doubled run pays nothing twice. The payout's own posting debits
 * that account by the same amount. Amounts and breakdowns are sums over those entries. Sums never
 * add two currencies: a run makes one payout per partner and currency owed.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { LedgerEntry } from '../db/entities/ledger-entry';
import { LedgerPosting } from '../db/entities/ledger-posting';
import { Partner } from '../db/entities/partner';
import { Payout, PayoutLine } from '../db/entities/payout';
import { publicId } from '../ids';
import { ACCOUNT, post } from './ledger';
import { periodEndOf } from './periods';
import type { PayoutSummary } from '../../workflows/messages';
import { ROW_LOCK } from '../db/row-lock';

/** A payout as GET /payouts shows it (the same shape a payout run answers). */
export type PayoutView = PayoutSummary;

/** What each posting not yet paid owes the partner, by posting. */
async function unpaid(manager: EntityManager, environment: Environment, partnerId?: string) {
  const q = manager
    .getRepository(LedgerEntry)
    .createQueryBuilder('e')
    .innerJoin(LedgerPosting, 'p', 'p.id = e.posting_id')
    .leftJoin(PayoutLine, 'l', 'l.posting_id = p.id')
    .select('p.id', 'posting_id')
    .addSelect('p.partner_id', 'partner_id')
    .addSelect("to_char(p.period_start, 'YYYY-MM-DD')", 'period_start')
    .addSelect('-sum(e.amount_cents)', 'owed')
    // A posting is in one currency (ledger.post), so its entries' currency is the posting's.
    .addSelect('min(e.currency)', 'currency')
    .where("e.account = :payable AND p.kind <> 'payout' AND p.environment = :environment AND l.posting_id IS NULL", { payable: ACCOUNT.serviceOwesPartner, environment })
    .groupBy('p.id');
  if (partnerId) q.andWhere('p.partner_id = :partnerId', { partnerId });
  return (await q.getRawMany<{ posting_id: string; partner_id: string; period_start: string; owed: string; currency: string }>()).map((r) => ({ ...r, owed: Number(r.owed) }));
}

/**
 * Pays every partner of the environment what is payable now, one payout per currency. A partner
 * whose net payable in a currency is not positive (clawbacks above commissions) is carried to the
 * next run in that currency. Returns the payouts made.
 * `onEach` runs before each partner (the activity heartbeats there, and may stop).
 */
export async function runPayouts(dataSource: DataSource, environment: Environment, at: Date, onEach: () => void = () => undefined): Promise<PayoutView[]> {
  const partnerIds = [...new Set((await unpaid(dataSource.manager, environment)).map((r) => r.partner_id))];
  const made: PayoutView[] = [];
  for (const partnerId of partnerIds) {
    onEach();
    const payouts = await dataSource.transaction(async (tx) => {
      // One run per partner at a time: the partner's row lock.
      await tx.getRepository(Partner).createQueryBuilder('p').setLock(ROW_LOCK).where('p.id = :partnerId', { partnerId }).getOneOrFail();
      const owed = await unpaid(tx, environment, partnerId);
      const created: Payout[] = [];
      for (const currency of [...new Set(owed.map((l) => l.currency))].sort()) {
        const payout = await payOut(tx, partnerId, environment, at, currency, owed.filter((l) => l.currency === currency));
        if (payout) created.push(payout);
      }
      return created;
    });
    made.push(...(await payoutViews(dataSource.manager, payouts)));
  }
  return made;
}

/** One payout of a partner's unpaid lines in one currency, when they come to more than zero. */
async function payOut(tx: EntityManager, partnerId: string, environment: Environment, at: Date, currency: string, lines: Awaited<ReturnType<typeof unpaid>>): Promise<Payout | undefined> {
  const amount = lines.reduce((sum, l) => sum + l.owed, 0);
  if (amount <= 0) return undefined;
  const periods = lines.map((l) => l.period_start).sort();
  const row = await tx.getRepository(Payout).save(
    tx.getRepository(Payout).create({
      publicId: publicId('po'),
      partnerId,
      environment,
      periodStart: periods[0],
      periodEnd: periodEndOf(periods[periods.length - 1]),
      currency,
      status: 'paid',
      paidAt: at,
    }),
  );
  await tx.getRepository(PayoutLine).insert(lines.map((l) => ({ payoutId: row.id, postingId: l.posting_id })));
  await post(tx, {
    idempotencyKey: `payout:${row.id}`,
    partnerId,
    environment,
    kind: 'payout',
    paymentModel: null,
    transactionId: null,
    payoutId: row.id,
    occurredAt: at,
    currency: row.currency,
    settled: false,
    entries: [
      { account: ACCOUNT.serviceOwesPartner, amountCents: amount },
      { account: ACCOUNT.serviceCash, amountCents: -amount },
    ],
  });
  return row;
}

/** Amount and breakdown of each payout, summed from the entries its lines pay. */
export async function payoutViews(manager: EntityManager, payouts: Payout[]): Promise<PayoutView[]> {
  if (!payouts.length) return [];
  const rows = await manager
    .getRepository(LedgerEntry)
    .createQueryBuilder('e')
    .innerJoin(LedgerPosting, 'p', 'p.id = e.posting_id')
    .innerJoin(PayoutLine, 'l', 'l.posting_id = p.id')
    .select('l.payout_id', 'payout_id')
    .addSelect("coalesce(p.payment_model, 'referral')", 'payment_model')
    .addSelect('-sum(e.amount_cents)', 'owed')
    // FILTER: Postgres's per-aggregate condition, the reversals' part of the same sum.
    .addSelect("-coalesce(sum(e.amount_cents) FILTER (WHERE p.kind IN ('reversal', 'referral_reversed')), 0)", 'reversed')
    .where('e.account = :payable AND l.payout_id IN (:...ids)', { payable: ACCOUNT.serviceOwesPartner, ids: payouts.map((p) => p.id) })
    .groupBy('l.payout_id')
    .addGroupBy("coalesce(p.payment_model, 'referral')")
    .getRawMany<{ payout_id: string; payment_model: string; owed: string; reversed: string }>();
  return payouts.map((p) => {
    const mine = rows.filter((r) => r.payout_id === p.id);
    const by = (model: string) => mine.filter((r) => r.payment_model === model).reduce((s, r) => s + Number(r.owed), 0);
    return {
      payout_id: p.publicId,
      period_start: p.periodStart,
      period_end: p.periodEnd,
      amount_cents: mine.reduce((s, r) => s + Number(r.owed), 0),
      currency: p.currency,
      status: p.status,
      paid_at: p.paidAt.toISOString(),
      breakdown: {
        service_collected_cents: by('service_collected'),
        brokerage_cents: by('brokerage'),
        referral_cents: by('referral'),
        reversed_cents: mine.reduce((s, r) => s + Number(r.reversed), 0),
        currency: p.currency,
      },
    };
  });
}

/** Newest first, keyset-paginated on (paid_at, id). */
export async function listPayouts(dataSource: DataSource, partnerId: string, environment: Environment, page: { limit: number; currency?: string; cursor?: { paidAt: string; id: string } }) {
  const q = dataSource
    .getRepository(Payout)
    .createQueryBuilder('p')
    .addSelect(`to_char(p.paid_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`, 'cursor_at')
    .where('p.partner_id = :partnerId AND p.environment = :environment', { partnerId, environment });
  if (page.currency) q.andWhere('p.currency = :currency', { currency: page.currency });
  if (page.cursor) q.andWhere('(p.paid_at, p.id) < (CAST(:at AS timestamptz), CAST(:id AS uuid))', { at: page.cursor.paidAt, id: page.cursor.id });
  const { entities, raw } = await q.orderBy('p.paid_at', 'DESC').addOrderBy('p.id', 'DESC').limit(page.limit + 1).getRawAndEntities<{ cursor_at: string }>();
  const shown = entities.slice(0, page.limit);
  return {
    data: await payoutViews(dataSource.manager, shown),
    next: entities.length > page.limit ? { paidAt: raw[page.limit - 1].cursor_at, id: shown[shown.length - 1].id } : null,
  };
}
