/**
 * The payment port: how the checkout page charges a card. The sandbox adapter behaves like a
 * card processor with test numbers (CONTRACT §9). A live processor (Stripe, Adyen, Braintree…)
 * implements the same `authorize` with the session id as its idempotency key, so a retried or
 * doubled charge is one charge at the processor too, and is given per environment where the API
 * is wired (src/main/services.ts). Live has none yet: a live checkout answers that card payments
 * are not available, and nothing is charged.
 *
 * Sandbox cards (spaces ignored, any future expiry, any 3-digit CVC):
 *   4242 4242 4242 4242  approved
 *   4000 0000 0000 0002  declined
 *   4000 0000 0000 0077  approved after a slow authorisation (about 3 seconds; the page shows progress)
 */
import { randomBytes } from 'node:crypto';

export interface CardPayment {
  /** Idempotency key: one session, one charge. */
  sessionId: string;
  amountCents: number;
  currency: string;
  cardNumber: string;
  expiryMonth: number;
  expiryYear: number;
  cvc: string;
}

export type Authorization = { approved: true; paymentRef: string; processor: string } | { approved: false; reason: string };

export interface PaymentPort {
  authorize(payment: CardPayment): Promise<Authorization>;
}

export const SANDBOX_CARDS = {
  approved: '4242424242424242',
  declined: '4000000000000002',
  slow: '4000000000000077',
} as const;

export const SLOW_AUTHORIZATION_MS = 3000;

export class SandboxCardProcessor implements PaymentPort {
  async authorize(payment: CardPayment): Promise<Authorization> {
    switch (payment.cardNumber) {
      case SANDBOX_CARDS.approved:
        return { approved: true, paymentRef: `pay_sbx_${randomBytes(10).toString('hex')}`, processor: 'sandbox' };
      case SANDBOX_CARDS.slow:
        await new Promise((resolve) => setTimeout(resolve, SLOW_AUTHORIZATION_MS));
        return { approved: true, paymentRef: `pay_sbx_${randomBytes(10).toString('hex')}`, processor: 'sandbox' };
      case SANDBOX_CARDS.declined:
        return { approved: false, reason: 'Your card was declined. Try another card.' };
      default:
        return { approved: false, reason: 'This card number is not a sandbox test card (use 4242 4242 4242 4242).' };
    }
  }
}
