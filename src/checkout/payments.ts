/**
 * The payment port: how the checkout page charges a card and how the service gives a buyer's
 * money back. The sandbox adapter behaves like a card processor with test numbers (CONTRACT §9)
 * and keeps its own record of charges and refunds (tables `sandbox_card_charges`,
 * `sandbox_card_refunds`). A live processor (Stripe, Adyen, Braintree…) implements the same four
 * calls with the same idempotency keys, so a retried or doubled call is one charge or one refund
 * at the processor too, and is given per environment where the API is wired
 * (src/main/services.ts). Live has none yet: a live checkout answers that card payments are not
 * available, and nothing is charged.
 *
 * The port is never called inside a database transaction (CONTRACT §15): a checkout marks its
 * session paying, authorises, then records the sale; a sweep asks `retrieve` about any payment
 * left paying by a crash and records or voids it (src/checkout/sessions.ts).
 *
 * Sandbox cards (spaces ignored, any future expiry, any 3-digit CVC):
 *   4242 4242 4242 4242  approved
 *   4000 0000 0000 0002  declined
 *   4000 0000 0000 0077  approved after a slow authorisation (about 3 seconds; the page shows progress)
 */
import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { SandboxCharge, SandboxRefund } from '../db/entities/sandbox-charge';
import { ROW_LOCK } from '../db/row-lock';

export interface CardPayment {
  /** Idempotency key: one attempt, one charge (`<session_id>:<attempt>`). */
  idempotencyKey: string;
  amountCents: number;
  currency: string;
  cardNumber: string;
  expiryMonth: number;
  expiryYear: number;
  cvc: string;
}

export type Authorization = { approved: true; paymentRef: string; processor: string } | { approved: false; reason: string };

export interface PaymentPort {
  /** Charges the card, once per idempotency key (asked again, answers the first outcome). */
  authorize(payment: CardPayment): Promise<Authorization>;
  /** What an authorisation asked with this key came to; undefined when the processor never saw it; `voided` once voided. */
  retrieve(idempotencyKey: string): Promise<(Authorization & { voided?: boolean }) | undefined>;
  /** Cancels an approved charge that was never recorded as a sale: the buyer is not charged. Idempotent. */
  void(paymentRef: string): Promise<void>;
  /** Gives `amountCents` of a charge back to the buyer's card, once per idempotency key. */
  refund(paymentRef: string, amountCents: number, idempotencyKey: string): Promise<void>;
}

export const SANDBOX_CARDS = {
  approved: '4242424242424242',
  declined: '4000000000000002',
  slow: '4000000000000077',
} as const;

export const SLOW_AUTHORIZATION_MS = 3000;

export class SandboxCardProcessor implements PaymentPort {
  readonly name = 'sandbox';

  constructor(private readonly dataSource: DataSource) {}

  async authorize(payment: CardPayment): Promise<Authorization> {
    const known = await this.retrieve(payment.idempotencyKey);
    if (known) return known;
    let outcome: Authorization;
    switch (payment.cardNumber) {
      case SANDBOX_CARDS.approved:
        outcome = { approved: true, paymentRef: `pay_sbx_${randomBytes(10).toString('hex')}`, processor: this.name };
        break;
      case SANDBOX_CARDS.slow:
        await new Promise((resolve) => setTimeout(resolve, SLOW_AUTHORIZATION_MS));
        outcome = { approved: true, paymentRef: `pay_sbx_${randomBytes(10).toString('hex')}`, processor: this.name };
        break;
      case SANDBOX_CARDS.declined:
        outcome = { approved: false, reason: 'Your card was declined. Try another card.' };
        break;
      default:
        outcome = { approved: false, reason: 'This card number is not a sandbox test card (use 4242 4242 4242 4242).' };
    }
    // The processor's own record; a racing call with the same key finds the first one.
    await this.dataSource
      .getRepository(SandboxCharge)
      .createQueryBuilder()
      .insert()
      .values({
        idempotencyKey: payment.idempotencyKey,
        paymentRef: outcome.approved ? outcome.paymentRef : `dec_sbx_${randomBytes(10).toString('hex')}`,
        status: outcome.approved ? 'approved' : 'declined',
        declineReason: outcome.approved ? null : outcome.reason,
        amountCents: payment.amountCents,
        currency: payment.currency,
        cardLast4: payment.cardNumber.slice(-4),
      })
      .orIgnore()
      .execute();
    return (await this.retrieve(payment.idempotencyKey))!;
  }

  async retrieve(idempotencyKey: string): Promise<(Authorization & { voided?: boolean }) | undefined> {
    const charge = await this.dataSource.getRepository(SandboxCharge).findOneBy({ idempotencyKey });
    if (!charge) return undefined;
    if (charge.status === 'declined') return { approved: false, reason: charge.declineReason ?? 'declined' };
    return { approved: true, paymentRef: charge.paymentRef, processor: this.name, ...(charge.status === 'voided' ? { voided: true } : {}) };
  }

  async void(paymentRef: string): Promise<void> {
    const charges = this.dataSource.getRepository(SandboxCharge);
    const charge = await charges.findOneBy({ paymentRef });
    if (!charge) throw new Error(`no sandbox charge ${paymentRef}`);
    if (charge.refundedCents > 0) throw new Error(`sandbox charge ${paymentRef} was refunded; it cannot be voided`);
    await charges.update({ id: charge.id, status: 'approved' }, { status: 'voided' });
  }

  async refund(paymentRef: string, amountCents: number, idempotencyKey: string): Promise<void> {
    await this.dataSource.transaction(async (tx) => {
      const charge = await tx.getRepository(SandboxCharge).createQueryBuilder('c').setLock(ROW_LOCK).where('c.payment_ref = :paymentRef', { paymentRef }).getOne();
      if (!charge || charge.status !== 'approved') throw new Error(`sandbox charge ${paymentRef} cannot be refunded (${charge?.status ?? 'unknown'})`);
      const inserted = await tx.getRepository(SandboxRefund).createQueryBuilder().insert().values({ idempotencyKey, chargeId: charge.id, amountCents }).orIgnore().returning(['id']).execute();
      if ((inserted.raw as unknown[]).length === 0) return; // asked before: refunded once
      if (charge.refundedCents + amountCents > charge.amountCents) throw new Error(`sandbox charge ${paymentRef}: a refund of ${amountCents} is more than is left`);
      await tx.getRepository(SandboxCharge).increment({ id: charge.id }, 'refundedCents', amountCents);
    });
  }
}
