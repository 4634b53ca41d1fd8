/**
 * `POST /webhooks/stripe` (CONTRACT §9): Stripe's events about live checkout attempts. No partner
 * signature: the `Stripe-Signature` header is verified by the library against the raw body and
 * STRIPE_WEBHOOK_SECRET with a 300 s tolerance (a missing, wrong or stale one is 400 and changes
 * nothing). Each event id is handled once (processor_events): a replay is 200 and changes nothing.
 * `checkout.session.completed` with `payment_status: "paid"` records the sale
 * (recordHostedPayment); `checkout.session.expired` gives the attempt back; `charge.refunded`
 * confirms a refund in the ledger; `charge.dispute.created` and `charge.dispute.closed` book a
 * dispute (src/checkout/disputes.ts).
 */
import Router from '@koa/router';
import getRawBody from 'raw-body';
import type { Logger } from 'pino';
import type Stripe from 'stripe';
import { ProcessorEvent } from '../db/entities/processor-event';
import { CheckoutPayment } from '../db/entities/checkout-session';
import { Order } from '../db/entities/order';
import { bookCardMoney } from './card-refunds';
import { closeDispute, openDispute } from './disputes';
import { recordHostedPayment, type CheckoutDeps, type HostedOutcome } from './sessions';
import type { StripeCheckout } from './stripe';

const MAX_EVENT_BYTES = 512 * 1024;

export function stripeWebhooks(deps: CheckoutDeps, stripe: StripeCheckout, logger: Logger): Router {
  const router = new Router();
  router.post('/webhooks/stripe', async (ctx) => {
    let raw: Buffer;
    try {
      raw = await getRawBody(ctx.req, { length: ctx.get('content-length') || undefined, limit: MAX_EVENT_BYTES });
    } catch {
      ctx.status = 400;
      ctx.body = { error: { code: 'validation_error', message: 'the event body could not be read' } };
      return;
    }
    let event: Stripe.Event;
    try {
      event = stripe.verifyEvent(raw, ctx.get('stripe-signature') || undefined);
    } catch (err) {
      ctx.status = 400;
      ctx.body = { error: { code: 'invalid_signature', message: `the Stripe-Signature does not verify: ${(err as Error).message}` } };
      return;
    }
    const events = deps.dataSource.getRepository(ProcessorEvent);
    if (await events.existsBy({ eventId: event.id })) {
      ctx.body = { received: true, duplicate: true };
      return;
    }
    const outcome = await handle(deps, event, (message, fields) => logger.warn(fields, message));
    // Marked handled once handled: a crash in between makes Stripe send it again, and each step is idempotent.
    await events.createQueryBuilder().insert().values({ eventId: event.id, processor: stripe.name, type: event.type, outcome }).orIgnore().execute();
    logger.info({ event_id: event.id, type: event.type, outcome }, 'stripe event handled');
    ctx.body = { received: true };
  });
  return router;
}

async function handle(deps: CheckoutDeps, event: Stripe.Event, log: (message: string, fields: Record<string, unknown>) => void): Promise<string> {
  if (event.type === 'charge.refunded') return confirmRefund(deps, event.data.object, log);
  if (event.type === 'charge.dispute.created' || event.type === 'charge.dispute.closed') return disputeEvent(deps, event.type, event.data.object, new Date(event.created * 1000), log);
  if (event.type !== 'checkout.session.completed' && event.type !== 'checkout.session.expired') return 'ignored';
  const session = event.data.object;
  const sessionPublicId = session.client_reference_id ?? session.metadata?.checkout_session;
  if (!sessionPublicId) return 'ignored';
  if (event.type === 'checkout.session.completed' && session.payment_status !== 'paid') return 'ignored';
  const paymentIntent = typeof session.payment_intent === 'string' ? session.payment_intent : (session.payment_intent?.id ?? null);
  return recordHostedPayment(
    deps,
    {
      kind: event.type === 'checkout.session.completed' ? 'paid' : 'expired',
      sessionPublicId,
      attempt: Number(session.metadata?.attempt),
      paymentRef: paymentIntent,
      amountCents: session.amount_total,
      currency: session.currency,
    },
    log,
  );
}

/**
 * `charge.refunded`: Stripe confirms a refund. The service books its `card_refund` when it asks for
 * one (refundBuyerCard, `refund:<order>`); this books it if that was cut short, once. A refund of a
 * payment whose order was not refunded (made in Stripe's dashboard) is for operators to settle.
 */
async function confirmRefund(deps: CheckoutDeps, charge: Stripe.Charge, log: (message: string, fields: Record<string, unknown>) => void): Promise<'refund_booked' | 'ignored'> {
  const paymentRef = typeof charge.payment_intent === 'string' ? charge.payment_intent : charge.payment_intent?.id;
  if (!paymentRef) return 'ignored';
  const payment = await deps.dataSource.getRepository(CheckoutPayment).findOneBy({ paymentRef });
  const order = payment && (await deps.dataSource.getRepository(Order).findOneBy({ checkoutSessionId: payment.sessionId }));
  if (!payment || !order) return 'ignored';
  if (order.status !== 'REFUNDED' && order.status !== 'TRANSFER_FAILED') {
    log('operator_action_needed: Stripe refunded a payment whose order was not refunded here', { order_id: order.publicId, payment_ref: paymentRef, amount_refunded: charge.amount_refunded });
    return 'ignored';
  }
  await deps.dataSource.transaction((tx) =>
    bookCardMoney(tx, 'card_refund', { partnerId: order.partnerId, environment: order.environment, paymentRef, amountCents: payment.amountCents, currency: payment.currency }),
  );
  return 'refund_booked';
}

/**
 * `charge.dispute.created` opens the order's dispute (the amount held, `order.dispute_opened`);
 * `charge.dispute.closed` ends it: `won` (or `warning_closed`, an inquiry that never became a
 * chargeback) releases the amount, `lost` books the loss (src/checkout/disputes.ts).
 */
async function disputeEvent(deps: CheckoutDeps, type: 'charge.dispute.created' | 'charge.dispute.closed', dispute: Stripe.Dispute, at: Date, log: (message: string, fields: Record<string, unknown>) => void): Promise<string> {
  const paymentRef = typeof dispute.payment_intent === 'string' ? dispute.payment_intent : dispute.payment_intent?.id;
  if (type === 'charge.dispute.created') {
    if (!paymentRef) return 'ignored';
    const outcome = await openDispute(deps.dataSource, { processorDisputeId: dispute.id, paymentRef, amountCents: dispute.amount, currency: dispute.currency, reason: dispute.reason ?? null, at });
    if (outcome === 'unknown_payment') log('operator_action_needed: Stripe opened a dispute on a payment this service has no record of', { dispute: dispute.id, payment_ref: paymentRef });
    else log('operator_action_needed: a card payment is disputed (admin disputes list)', { dispute: dispute.id, payment_ref: paymentRef, amount_cents: dispute.amount });
    return `dispute_${outcome}`;
  }
  const outcome = dispute.status === 'lost' ? 'lost' : dispute.status === 'won' || dispute.status === 'warning_closed' ? 'won' : undefined;
  if (!outcome) return 'ignored';
  return `dispute_${await closeDispute(deps.dataSource, dispute.id, outcome, at)}`;
}
