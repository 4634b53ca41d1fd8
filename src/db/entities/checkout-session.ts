import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';
import { centsColumn } from '../columns';

export type CheckoutStatus = 'open' | 'complete' | 'expired';

/** A hosted checkout (CONTRACT §9): open for 7 days (its workflow's timer), complete once paid. */
@Entity({ name: 'checkout_sessions' })
export class CheckoutSession {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'public_id', type: 'text', unique: true })
  publicId: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ name: 'domain_id', type: 'uuid' })
  domainId: string;

  @Column({ type: 'text' })
  domain: string;

  /** The listing price when the session was opened; paying re-checks it. */
  @Column({ name: 'price_cents', ...centsColumn })
  priceCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ name: 'success_url', type: 'text', nullable: true })
  successUrl: string | null;

  @Column({ name: 'cancel_url', type: 'text', nullable: true })
  cancelUrl: string | null;

  @Column({ name: 'customer_email', type: 'text', nullable: true })
  customerEmail: string | null;

  @Column({ name: 'client_reference_id', type: 'text', nullable: true })
  clientReferenceId: string | null;

  @Column({ type: 'text' })
  status: CheckoutStatus;

  @Column({ name: 'order_id', type: 'uuid', nullable: true })
  orderId: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'closed_at', type: 'timestamptz', nullable: true })
  closedAt: Date | null;

  /** Cards declined on this session; at MAX_DECLINED_ATTEMPTS it takes no more (card testing). */
  @Column({ name: 'declined_attempts', type: 'integer', default: 0 })
  declinedAttempts: number;

  /** Payments tried on this session; `<session_id>:<attempt>` is the processor's idempotency key. */
  @Column({ name: 'payment_attempt', type: 'integer', default: 0 })
  paymentAttempt: number;

  /** While a card is out with the processor: since when (the name is held meanwhile). */
  @Column({ name: 'paying_since', type: 'timestamptz', nullable: true })
  payingSince: Date | null;

  /** What the payment out records once approved: the buyer, the card's last digits, the referral link. */
  @Column({ name: 'paying_details', type: 'jsonb', nullable: true })
  payingDetails: PayingDetails | null;

  /** When the session's workflow was told of the payment (its paid signal); null until then, and the recovery sweep signals again. */
  @Column({ name: 'paid_signalled_at', type: 'timestamptz', nullable: true })
  paidSignalledAt: Date | null;
}

export interface PayingDetails {
  buyerName: string;
  buyerEmail: string;
  registrant: Record<string, string>;
  cardLast4: string;
  linkCode: string | null;
  /** A digest of the paying browser's session (its CSRF secret): only that browser is shown the receipt. */
  browser?: string;
  /** An attempt on the processor's own page (live): settled by its events, not by the card sweep. */
  hosted?: boolean;
  /** That attempt's session at the processor (Stripe's Checkout Session id), for the sweep to ask about when its events are lost. */
  processorSessionId?: string;
}

/** The one card payment taken on a session. */
@Entity({ name: 'checkout_payments' })
export class CheckoutPayment {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'session_id', type: 'uuid', unique: true })
  sessionId: string;

  @Column({ type: 'text' })
  processor: string;

  @Column({ name: 'payment_ref', type: 'text', unique: true })
  paymentRef: string;

  @Column({ name: 'amount_cents', ...centsColumn })
  amountCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ name: 'card_last4', type: 'char', length: 4 })
  cardLast4: string;

  @Column({ name: 'buyer_name', type: 'text' })
  buyerName: string;

  @Column({ name: 'buyer_email', type: 'text' })
  buyerEmail: string;

  /** Optional registrant details the buyer gave (organisation, address, phone). */
  @Column({ type: 'jsonb' })
  registrant: Record<string, string>;

  /** A digest of the browser session whose attempt paid (null for payments before it was kept): its receipt is shown to it alone. */
  @Column({ name: 'payer_browser', type: 'text', nullable: true })
  payerBrowser: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}

export type CardAttemptOutcome = 'declined' | 'voided' | 'recorded' | 'never_seen';

/**
 * A payment attempt given up before the processor answered (released by the sweep, or found
 * stale when its approval came): asked again until the processor answers (CARD_ATTEMPT_NEVER_SEEN_MS
 * for one it never saw), and an approval found for it is voided.
 */
@Entity({ name: 'card_attempt_checks' })
export class CardAttemptCheck {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'session_id', type: 'uuid' })
  sessionId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ name: 'idempotency_key', type: 'text', unique: true })
  idempotencyKey: string;

  /** The paying browser's digest, so that its next visit to the checkout is told what became of the attempt. */
  @Column({ type: 'text', nullable: true })
  browser: string | null;

  @Column({ name: 'released_at', type: 'timestamptz', default: () => 'now()' })
  releasedAt: Date;

  @Column({ type: 'integer', default: 0 })
  asks: number;

  @Column({ name: 'last_asked_at', type: 'timestamptz', nullable: true })
  lastAskedAt: Date | null;

  @Column({ name: 'resolved_at', type: 'timestamptz', nullable: true })
  resolvedAt: Date | null;

  @Column({ type: 'text', nullable: true })
  outcome: CardAttemptOutcome | null;
}
