/**
 * The ledger's one way in (CONTRACT §8): `post` books a business event as a posting whose
 * entries sum to zero, once per idempotency key, in the same database transaction as the state
 * change that causes it, into the period it belongs to.
 *
 * Periods: a posting goes into the month of its `occurredAt` unless that month's settlement (of
 * the posting's currency: sums never add two currencies) is already closed for the partner, in which case it goes into the next month that is not. The
 * booking holds the settlement row's lock until commit and the close takes the same lock, so a
 * closed settlement can never receive a posting: it never changes.
 */
import type { EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { LedgerEntry } from '../db/entities/ledger-entry';
import { LedgerPosting, type PostingKind } from '../db/entities/ledger-posting';
import type { TransactionPaymentModel } from '../db/entities/sale-transaction';
import { Settlement } from '../db/entities/settlement';
import { publicId } from '../ids';
import { nextPeriodStart, periodEndOf, periodStartOf } from './periods';
import { ledgerPostings } from '../metrics/metrics';
import { ROW_LOCK } from '../db/row-lock';

/** Account names; amounts are positive on the debit side (see the ledger migration). */
export const ACCOUNT = {
  sales: 'sales',
  partnerOwesService: 'partner_owes_service',
  partnerCommissionRetained: 'partner_commission_retained',
  buyerPayments: 'buyer_payments',
  partnerCommissionExpense: 'partner_commission_expense',
  /** A service-collected sale's commission while its 30-day refund window runs (not yet payable). */
  partnerCommissionPending: 'partner_commission_pending',
  serviceOwesPartner: 'service_owes_partner',
  serviceCash: 'service_cash',
  referralCommissionExpense: 'referral_commission_expense',
  referralCommissionPending: 'referral_commission_pending',
  escrowHeld: 'escrow_held',
  escrowPayableSeller: 'escrow_payable_seller',
  brokerageFees: 'brokerage_fees',
  /** A live card payment's amount the buyer's bank took back while it disputes it (a chargeback under way). */
  disputesHeld: 'disputes_held',
} as const;
export type Account = (typeof ACCOUNT)[keyof typeof ACCOUNT];

export interface NewPosting {
  idempotencyKey: string;
  partnerId: string;
  environment: Environment;
  kind: PostingKind;
  paymentModel: TransactionPaymentModel | null;
  transactionId: string | null;
  payoutId?: string | null;
  referralSaleId?: string | null;
  occurredAt: Date;
  currency: string;
  entries: Array<{ account: Account; amountCents: number }>;
  /**
   * Whether the posting falls under a settlement (sales and reversals): it then goes into an open
   * settlement period. A payout is booked in the month it is made, outside any settlement.
   */
  settled?: boolean;
}

/** The settlement period a posting made now for `occurredAt` goes into; its row stays locked until commit. */
export async function openPeriodFor(tx: EntityManager, partnerId: string, environment: Environment, occurredAt: Date, currency: string): Promise<string> {
  const settlements = tx.getRepository(Settlement);
  for (let periodStart = periodStartOf(occurredAt); ; periodStart = nextPeriodStart(periodStart)) {
    await settlements
      .createQueryBuilder()
      .insert()
      .values({ publicId: publicId('stl'), partnerId, environment, periodStart, periodEnd: periodEndOf(periodStart), currency, status: 'open' })
      .orIgnore()
      .execute();
    const settlement = await settlements
      .createQueryBuilder('s')
      .setLock(ROW_LOCK)
      .where('s.partner_id = :partnerId AND s.environment = :environment AND s.period_start = :periodStart AND s.currency = :currency', { partnerId, environment, periodStart, currency })
      .getOneOrFail();
    if (settlement.status === 'open') return periodStart;
  }
}

/** Books the posting unless its idempotency key was booked before; returns it when new. */
export async function post(tx: EntityManager, posting: NewPosting): Promise<LedgerPosting | undefined> {
  const sum = posting.entries.reduce((total, e) => total + e.amountCents, 0);
  if (sum !== 0) throw new Error(`posting ${posting.idempotencyKey} does not balance (${sum})`);
  if (posting.entries.some((e) => !Number.isSafeInteger(e.amountCents))) throw new Error(`posting ${posting.idempotencyKey} has a non-integer amount`);
  const periodStart =
    posting.settled === false ? periodStartOf(posting.occurredAt) : await openPeriodFor(tx, posting.partnerId, posting.environment, posting.occurredAt, posting.currency);
  const inserted = await tx
    .getRepository(LedgerPosting)
    .createQueryBuilder()
    .insert()
    .values({
      idempotencyKey: posting.idempotencyKey,
      partnerId: posting.partnerId,
      environment: posting.environment,
      kind: posting.kind,
      paymentModel: posting.paymentModel,
      transactionId: posting.transactionId,
      payoutId: posting.payoutId ?? null,
      referralSaleId: posting.referralSaleId ?? null,
      periodStart,
      occurredAt: posting.occurredAt,
    })
    .orIgnore()
    .returning(['id'])
    .execute();
  const row = (inserted.raw as Array<{ id: string }>)[0];
  if (!row) return undefined;
  ledgerPostings.inc({ kind: posting.kind });
  await tx.getRepository(LedgerEntry).insert(
    posting.entries
      .filter((e) => e.amountCents !== 0)
      .map((e) => ({
        postingId: row.id,
        partnerId: posting.partnerId,
        environment: posting.environment,
        transactionId: posting.transactionId,
        account: e.account,
        amountCents: e.amountCents,
        currency: posting.currency,
      })),
  );
  return tx.getRepository(LedgerPosting).findOneByOrFail({ id: row.id });
}

/** The entries of a sale of `gross` with `commission` for the partner, by payment model. */
export function saleEntries(paymentModel: TransactionPaymentModel, gross: number, commission: number): NewPosting['entries'] {
  if (paymentModel === 'partner_collected') {
    return [
      { account: ACCOUNT.sales, amountCents: -gross },
      { account: ACCOUNT.partnerOwesService, amountCents: gross - commission },
      { account: ACCOUNT.partnerCommissionRetained, amountCents: commission },
    ];
  }
  // Service-collected: the commission is pending until the sale's 30-day refund window passes
  // (commissionPayableEntries, booked by the checkout session's workflow timer).
  return [
    { account: ACCOUNT.buyerPayments, amountCents: gross },
    { account: ACCOUNT.sales, amountCents: -gross },
    { account: ACCOUNT.partnerCommissionExpense, amountCents: commission },
    { account: ACCOUNT.partnerCommissionPending, amountCents: -commission },
  ];
}

/** A service-collected sale's refund window passed: its commission becomes payable (paid by a payout). */
export function commissionPayableEntries(commission: number): NewPosting['entries'] {
  return [
    { account: ACCOUNT.partnerCommissionPending, amountCents: commission },
    { account: ACCOUNT.serviceOwesPartner, amountCents: -commission },
  ];
}

/**
 * The entries of a brokered deal (CONTRACT §10): the buyer's `price` is held in escrow, of which
 * `price - fee` is owed to the seller and `fee` is the service's brokerage income; the partner's
 * `share` of the fee is an expense the service owes the partner (paid by a payout).
 */
export function brokerageEntries(price: number, fee: number, share: number): NewPosting['entries'] {
  return [
    { account: ACCOUNT.escrowHeld, amountCents: price },
    { account: ACCOUNT.escrowPayableSeller, amountCents: -(price - fee) },
    { account: ACCOUNT.brokerageFees, amountCents: -fee },
    { account: ACCOUNT.partnerCommissionExpense, amountCents: share },
    { account: ACCOUNT.serviceOwesPartner, amountCents: -share },
  ];
}
