/**
 * Referred sales and their commission lines (CONTRACT §11). Every line is a ledger posting, once
 * per business key, on the referring partner's accounts:
 *
 *   pending   referral:<sale>:pending    referral_commission_expense +C, referral_commission_pending −C
 *   accrued   referral:<sale>:accrued    referral_commission_pending +C, service_owes_partner −C
 *   reversed  referral:<sale>:reversed   a pending one voided (pending +C, expense −C), or an
 *                                        accrued one taken back (service_owes_partner +C, expense −C)
 *   paid_out  the payout's own posting (service_owes_partner debited by what it pays)
 *
 * The commission is the partner's referral rate, fixed on the sale, of the amount, rounded down.
 * A sale accrues when its 30-day refund window has passed (the timer of workflow
 * `referral:<sale_id>`); a refund before that voids it, a refund after takes it back.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { LedgerPosting } from '../db/entities/ledger-posting';
import { Order } from '../db/entities/order';
import { Partner } from '../db/entities/partner';
import { ReferralLink, ReferralSale } from '../db/entities/referral';
import { ACCOUNT, post } from '../finance/ledger';
import { publicId } from '../ids';
import { commissionCents } from '../money';
import { ROW_LOCK } from '../db/row-lock';

async function lockSale(tx: EntityManager, where: { id?: string; orderId?: string }): Promise<ReferralSale | null> {
  const q = tx.getRepository(ReferralSale).createQueryBuilder('s').setLock(ROW_LOCK);
  if (where.id) q.where('s.id = :id', { id: where.id });
  else q.where('s.order_id = :orderId', { orderId: where.orderId });
  return q.getOne();
}

async function hasLine(tx: EntityManager, saleId: string, kind: 'referral_accrued' | 'referral_reversed'): Promise<boolean> {
  return tx.getRepository(LedgerPosting).existsBy({ referralSaleId: saleId, kind });
}

/**
 * Records the referred sale and its pending line, in the transaction that records the sale. None
 * when the link's partner is the seller (CONTRACT §11: no commission on a partner's own sale).
 */
export async function recordReferredSale(
  tx: EntityManager,
  input: { linkCode: string; environment: Environment; sellerPartnerId: string; orderId: string; buyerEmail: string; domain: string; amountCents: number; currency: string; at: Date },
): Promise<ReferralSale | undefined> {
  const link = await tx.getRepository(ReferralLink).findOneBy({ code: input.linkCode, environment: input.environment });
  if (!link || link.partnerId === input.sellerPartnerId) return undefined;
  const partner = await tx.getRepository(Partner).findOneByOrFail({ id: link.partnerId });
  if (!partner.affiliateAccountId) return undefined;
  const commission = commissionCents(input.amountCents, partner.commissionReferralBps);
  const sales = tx.getRepository(ReferralSale);
  const sale = await sales.save(
    sales.create({
      publicId: publicId('rs'),
      linkId: link.id,
      partnerId: link.partnerId,
      environment: input.environment,
      orderId: input.orderId,
      buyerEmail: input.buyerEmail,
      domain: input.domain,
      amountCents: input.amountCents,
      commissionBps: partner.commissionReferralBps,
      commissionCents: commission,
      currency: input.currency,
      occurredAt: input.at,
    }),
  );
  await post(tx, {
    idempotencyKey: `referral:${sale.id}:pending`,
    partnerId: link.partnerId,
    environment: input.environment,
    kind: 'referral_pending',
    paymentModel: null,
    transactionId: null,
    referralSaleId: sale.id,
    occurredAt: input.at,
    currency: input.currency,
    settled: false,
    entries: [
      { account: ACCOUNT.referralCommissionExpense, amountCents: commission },
      { account: ACCOUNT.referralCommissionPending, amountCents: -commission },
    ],
  });
  return sale;
}

/** The refund window passed: the pending commission enters the balance (unless the sale was undone). */
export async function accrueCommission(dataSource: DataSource, salePublicId: string, at: Date): Promise<'accrued' | 'reversed' | 'absent'> {
  return dataSource.transaction(async (tx) => {
    const found = await tx.getRepository(ReferralSale).findOneBy({ publicId: salePublicId });
    const sale = found && (await lockSale(tx, { id: found.id }));
    if (!sale) return 'absent';
    if (await hasLine(tx, sale.id, 'referral_reversed')) return 'reversed';
    if (await hasLine(tx, sale.id, 'referral_accrued')) return 'accrued';
    const order = await tx.getRepository(Order).findOneByOrFail({ id: sale.orderId });
    if (order.status === 'REFUNDED' || order.status === 'TRANSFER_FAILED') {
      await reverseLocked(tx, sale, at);
      return 'reversed';
    }
    await post(tx, {
      idempotencyKey: `referral:${sale.id}:accrued`,
      partnerId: sale.partnerId,
      environment: sale.environment,
      kind: 'referral_accrued',
      paymentModel: null,
      transactionId: null,
      referralSaleId: sale.id,
      occurredAt: at,
      currency: sale.currency,
      settled: false,
      entries: [
        { account: ACCOUNT.referralCommissionPending, amountCents: sale.commissionCents },
        { account: ACCOUNT.serviceOwesPartner, amountCents: -sale.commissionCents },
      ],
    });
    return 'accrued';
  });
}

async function reverseLocked(tx: EntityManager, sale: ReferralSale, at: Date): Promise<boolean> {
  if (await hasLine(tx, sale.id, 'referral_reversed')) return false;
  const accrued = await hasLine(tx, sale.id, 'referral_accrued');
  const posted = await post(tx, {
    idempotencyKey: `referral:${sale.id}:reversed`,
    partnerId: sale.partnerId,
    environment: sale.environment,
    kind: 'referral_reversed',
    paymentModel: null,
    transactionId: null,
    referralSaleId: sale.id,
    occurredAt: at,
    currency: sale.currency,
    settled: false,
    entries: [
      { account: accrued ? ACCOUNT.serviceOwesPartner : ACCOUNT.referralCommissionPending, amountCents: sale.commissionCents },
      { account: ACCOUNT.referralCommissionExpense, amountCents: -sale.commissionCents },
    ],
  });
  return posted !== undefined;
}

/** The referred sale was refunded: its commission is voided (pending) or taken back (accrued), once. */
export async function reverseCommissionOfOrder(tx: EntityManager, orderId: string, at: Date): Promise<boolean> {
  const sale = await lockSale(tx, { orderId });
  return sale ? reverseLocked(tx, sale, at) : false;
}
