/**
 * Live card payments through Stripe (CONTRACT §9, live payments), with the official `stripe`
 * library. The service never sees a card number: each payment attempt is a Stripe Checkout
 * Session (`mode: payment`) on Stripe's own page, for the session's price and currency, carrying
 * the checkout session's id as `client_reference_id` and in `metadata` (also on its
 * PaymentIntent), the buyer's email, the attempt's idempotency key (`<session_id>:<attempt>`) and
 * an expiry no later than the service's session. The sale is recorded from Stripe's signed event
 * (`POST /webhooks/stripe`, src/checkout/stripe-events.ts), never from the buyer's return.
 */
import Stripe from 'stripe';

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string;
  /** The API's base URL (a local stripe-mock in the tests); Stripe's own unless given. */
  apiUrl?: string;
}

/** What Stripe's Checkout Session for one attempt needs. */
export interface HostedAttempt {
  /** `<session_id>:<attempt>`: Stripe's idempotency key, so a retried create is one Checkout Session. */
  idempotencyKey: string;
  sessionPublicId: string;
  attempt: number;
  domain: string;
  amountCents: number;
  currency: string;
  buyerEmail: string;
  /** Where Stripe sends the buyer after paying, and after cancelling. */
  returnUrl: string;
  cancelUrl: string;
  /** The service's session ends then: Stripe's must not outlive it. */
  expiresAt: Date;
}

/** Stripe allows a Checkout Session 30 minutes to 24 hours. */
const MIN_EXPIRY_S = 30 * 60 + 60;
const MAX_EXPIRY_S = 24 * 60 * 60 - 60;

/** The tolerance of a webhook's signed timestamp (CONTRACT §9): older events are refused. */
export const STRIPE_EVENT_TOLERANCE_S = 300;

/** A Checkout Session as the sweep reads it. */
export interface HostedAttemptState {
  status: 'open' | 'complete' | 'expired';
  paid: boolean;
  paymentRef: string | null;
  amountCents: number | null;
  currency: string | null;
}

/** The service's session ends within Stripe's 30-minute floor: no attempt is opened. */
export class CheckoutEndsTooSoon extends Error {
  readonly name = 'CheckoutEndsTooSoon';
}

export class StripeCheckout {
  readonly name = 'stripe';
  private readonly stripe: Stripe;

  constructor(private readonly settings: StripeSettings) {
    const api = settings.apiUrl ? new URL(settings.apiUrl) : undefined;
    this.stripe = new Stripe(settings.secretKey, {
      ...(api ? { host: api.hostname, port: api.port || (api.protocol === 'https:' ? 443 : 80), protocol: api.protocol === 'https:' ? 'https' : 'http' } : {}),
      // The library retries a request that failed on the network once, with the same idempotency
      // key; each try is bounded, so a slow Stripe never outlasts the sweep's 20 s heartbeat.
      maxNetworkRetries: 1,
      timeout: 8_000,
    });
  }

  /** Opens Stripe's page for one attempt; answers where to send the buyer and its id. */
  async startAttempt(a: HostedAttempt): Promise<{ url: string; id: string }> {
    const metadata = { checkout_session: a.sessionPublicId, attempt: String(a.attempt) };
    const now = Math.floor(Date.now() / 1000);
    // Never past the service's own session; Stripe's floor is 30 minutes, so a session closer to
    // its end than that is not offered to Stripe (the page says it is about to expire).
    const expires = Math.min(now + MAX_EXPIRY_S, Math.floor(a.expiresAt.getTime() / 1000));
    if (expires < now + MIN_EXPIRY_S) throw new CheckoutEndsTooSoon();
    const session = await this.stripe.checkout.sessions.create(
      {
        mode: 'payment',
        line_items: [{ quantity: 1, price_data: { currency: a.currency.toLowerCase(), unit_amount: a.amountCents, product_data: { name: a.domain } } }],
        client_reference_id: a.sessionPublicId,
        metadata,
        payment_intent_data: { metadata },
        customer_email: a.buyerEmail,
        success_url: a.returnUrl,
        cancel_url: a.cancelUrl,
        expires_at: expires,
      },
      { idempotencyKey: a.idempotencyKey },
    );
    if (!session.url) throw new Error(`Stripe answered Checkout Session ${session.id} without a url`);
    return { url: session.url, id: session.id };
  }

  /** What became of an attempt's Checkout Session (the sweep's question when its events were lost). */
  async retrieveAttempt(checkoutSessionId: string): Promise<HostedAttemptState> {
    const session = await this.stripe.checkout.sessions.retrieve(checkoutSessionId);
    const paymentRef = typeof session.payment_intent === 'string' ? session.payment_intent : (session.payment_intent?.id ?? null);
    const status: HostedAttemptState['status'] = session.status === 'complete' ? 'complete' : session.status === 'expired' ? 'expired' : 'open';
    return { status, paid: session.payment_status === 'paid', paymentRef, amountCents: session.amount_total, currency: session.currency };
  }

  /** Gives `amountCents` of a payment back, once per idempotency key (`refund:<order>`). */
  async refund(paymentIntentId: string, amountCents: number, idempotencyKey: string): Promise<void> {
    await this.stripe.refunds.create({ payment_intent: paymentIntentId, amount: amountCents }, { idempotencyKey });
  }

  /** The event Stripe signed, or a throw when the signature, its secret or its time (300 s) do not hold. */
  verifyEvent(rawBody: Buffer, signatureHeader: string | undefined): Stripe.Event {
    if (!signatureHeader) throw new Error('no Stripe-Signature header');
    return this.stripe.webhooks.constructEvent(rawBody, signatureHeader, this.settings.webhookSecret, STRIPE_EVENT_TOLERANCE_S);
  }

  /** A signature header for `payload` as Stripe makes it (the tests' events, with the library's helper). */
  signForTest(payload: string, timestamp?: number): string {
    return this.stripe.webhooks.generateTestHeaderString({ payload, secret: this.settings.webhookSecret, ...(timestamp ? { timestamp } : {}) });
  }
}

/** Where Stripe's hosted Checkout page lives (the live form's page allows a redirect there). */
export const STRIPE_CHECKOUT_ORIGIN = 'https://checkout.stripe.com';
