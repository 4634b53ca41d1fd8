/**
 * Hosted checkout sessions (CONTRACT §9). Opening one reserves nothing (seven days would block
 * the market); paying does, in one transaction with the same rules as a quote and an order: the
 * name must still be listed at the price the session showed, the session must be open, and the
 * payment is taken once per session (its row lock, then a unique payment row).
 */
import { LessThan, MoreThan, type DataSource, type EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { ApiError } from '../api/errors';
import { CheckoutPayment, CheckoutSession } from '../db/entities/checkout-session';
import { Domain } from '../db/entities/domain';
import { Order } from '../db/entities/order';
import { LOCK_TAKEN, whenUnlocked } from '../db/when-unlocked';
import { publicId } from '../ids';
import { markWorkflowStarted, recordSale } from '../orders/orders';
import { startOrderFulfilment } from '../orders/start-workflows';
import { startWorkflow, type WorkflowStarter } from '../temporal/start';
import { notifyEventsAppended } from '../webhooks/notify';
import { recordReferredSale } from '../referral/commissions';
import { ReferralSale } from '../db/entities/referral';
import { checkoutPaidSignal, checkoutWorkflowId, referralWorkflowId } from '../../workflows/messages';
import type { CheckoutPageToken } from './page-token';
import type { CardPayment, PaymentPort } from './payments';

export const CHECKOUT_SESSION_MS = 7 * 24 * 60 * 60 * 1000;

export interface SessionView {
  session_id: string;
  checkout_url: string;
  domain: string;
  price_cents: number;
  currency: string;
  status: CheckoutSession['status'];
  expires_at: string;
  created_at: string;
  order_id: string | null;
  success_url: string | null;
  cancel_url: string | null;
  customer_email: string | null;
  client_reference_id: string | null;
}

export interface CheckoutDeps {
  dataSource: DataSource;
  workflows: WorkflowStarter;
  pageToken: CheckoutPageToken;
  /** Card processors per environment; live has none until one is configured. */
  payments: Partial<Record<Environment, PaymentPort>>;
}

export function checkoutUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/$/, '')}/checkout?pt=${encodeURIComponent(token)}`;
}

export async function sessionView(deps: CheckoutDeps, session: CheckoutSession, baseUrl: string): Promise<SessionView> {
  const order = session.orderId ? await deps.dataSource.getRepository(Order).findOne({ select: { id: true, publicId: true }, where: { id: session.orderId } }) : null;
  return {
    session_id: session.publicId,
    checkout_url: checkoutUrl(baseUrl, deps.pageToken.sign(session.publicId, session.expiresAt)),
    domain: session.domain,
    price_cents: session.priceCents,
    currency: session.currency,
    status: session.status,
    expires_at: session.expiresAt.toISOString(),
    created_at: session.createdAt.toISOString(),
    order_id: order?.publicId ?? null,
    success_url: session.successUrl,
    cancel_url: session.cancelUrl,
    customer_email: session.customerEmail,
    client_reference_id: session.clientReferenceId,
  };
}

export async function openSession(
  deps: CheckoutDeps,
  input: { partnerId: string; environment: Environment; domain: string; successUrl?: string; cancelUrl?: string; customerEmail?: string; clientReferenceId?: string },
  /** The caller's transaction, when it has one (the marketplace's "Buy now" holds a lock in it). */
  manager: EntityManager = deps.dataSource.manager,
): Promise<CheckoutSession> {
  const domain = await manager.getRepository(Domain).findOneBy({ environment: input.environment, name: input.domain });
  if (!domain || domain.status === 'unlisted') throw new ApiError('not_found', `${input.domain} is not listed`);
  if (domain.status === 'reserved') throw new ApiError('conflict', `${input.domain} is reserved by an active quote`);
  if (domain.status === 'sold') throw new ApiError('conflict', `${input.domain} has been sold`);
  if (!deps.payments[input.environment]) throw new ApiError('service_unavailable', `card payments are not available in ${input.environment} yet`);

  const sessionPublicId = publicId('cs');
  // The timer exists before the session does, so no session outlives its seven days.
  await startWorkflow(deps.workflows, 'checkoutSessionWorkflow', {
    workflowId: checkoutWorkflowId(sessionPublicId),
    args: [{ sessionPublicId }],
    mode: 'fresh',
    summary: `Checkout ${sessionPublicId} ${domain.name} for partner ${input.partnerId} (${input.environment})`,
    details: 'A hosted checkout session: open for 7 days, then expired unless the buyer paid.',
    attributes: { partnerId: input.partnerId, domain: domain.name, environment: input.environment, businessStatus: 'open' },
  });
  const sessions = manager.getRepository(CheckoutSession);
  const now = new Date();
  return sessions.save(
    sessions.create({
      publicId: sessionPublicId,
      partnerId: input.partnerId,
      environment: input.environment,
      domainId: domain.id,
      domain: domain.name,
      priceCents: domain.buyNowPriceCents,
      currency: domain.currency,
      successUrl: input.successUrl ?? null,
      cancelUrl: input.cancelUrl ?? null,
      customerEmail: input.customerEmail ?? null,
      clientReferenceId: input.clientReferenceId ?? null,
      status: 'open',
      orderId: null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + CHECKOUT_SESSION_MS),
      closedAt: null,
    }),
  );
}

/** The first int4 of the "Buy now" advisory locks (the admission locks are 804_201 and 804_202). */
const BUY_NOW_LOCK_SPACE = 804_203;

/**
 * The checkout session behind a name's "Buy now" button. Anyone may press it, so an open session
 * of the last hour for the name is reused: repeated presses (or a script) cannot open sessions and
 * seven-day workflows without end. Presses at the same moment take turns on a per-name lock: the
 * one holding it finds or opens the session in its transaction, the others wait outside the pool
 * (whenUnlocked: a burst of presses opens one session and never holds every database connection).
 */
export async function buyNowSession(deps: CheckoutDeps, housePartnerId: string, environment: Environment, name: string): Promise<CheckoutSession> {
  const session = await whenUnlocked(
    () =>
      deps.dataSource.transaction(async (tx) => {
        // Raw SQL: a Postgres advisory lock per name, held until this transaction ends.
        const [{ locked }] = (await tx.query('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS locked', [BUY_NOW_LOCK_SPACE, `${environment}:${name}`])) as Array<{ locked: boolean }>;
        if (!locked) return LOCK_TAKEN;
        const open = await tx.getRepository(CheckoutSession).findOne({
          // A session that took its last declined card is not handed to the next buyer.
          where: { partnerId: housePartnerId, environment, domain: name, status: 'open', createdAt: MoreThan(new Date(Date.now() - 60 * 60 * 1000)), declinedAttempts: LessThan(MAX_DECLINED_ATTEMPTS) },
          order: { createdAt: 'DESC' },
        });
        return open ?? (await openSession(deps, { partnerId: housePartnerId, environment, domain: name }, tx));
      }),
    { giveUpMs: 5_000, everyMs: 100 },
  );
  if (!session) throw new Error(`"Buy now" for ${name}: its lock stayed taken for 5 s`);
  return session;
}

export async function findSession(dataSource: DataSource, sessionPublicId: string): Promise<CheckoutSession | null> {
  return dataSource.getRepository(CheckoutSession).findOneBy({ publicId: sessionPublicId });
}

/** The session's timer fired: an open session expires; a paid one is left alone. */
export async function expireSession(dataSource: DataSource, sessionPublicId: string): Promise<'expired' | 'complete' | 'absent'> {
  return dataSource.transaction(async (tx) => {
    const session = await tx.getRepository(CheckoutSession).createQueryBuilder('s').setLock('pessimistic_write').where('s.public_id = :sessionPublicId', { sessionPublicId }).getOne();
    if (!session) return 'absent';
    if (session.status === 'complete') return 'complete';
    if (session.status === 'open') await tx.getRepository(CheckoutSession).update({ id: session.id }, { status: 'expired', closedAt: () => 'now()' });
    return 'expired';
  });
}

export interface BuyerDetails {
  name: string;
  email: string;
  registrant: Record<string, string>;
}

export type PayOutcome =
  | { kind: 'paid'; session: CheckoutSession; orderPublicId: string }
  | { kind: 'declined'; reason: string }
  | { kind: 'expired' }
  | { kind: 'unavailable'; reason: string }
  | { kind: 'not_found' }
  | { kind: 'no_processor' }
  /** Another payment of the session held it for longer than a buyer should wait (LOCK_WAIT_MS). */
  | { kind: 'busy' }
  /** MAX_DECLINED_ATTEMPTS cards were declined on this session: it takes no more. */
  | { kind: 'too_many_declines' };

/** Declined cards after which a session takes no more (so it cannot serve to test stolen cards). */
export const MAX_DECLINED_ATTEMPTS = 5;

/** How long a submit waits for another payment of the same session to finish. */
const LOCK_WAIT_MS = 60_000;

/**
 * Pays the session: once. A second submit (double click, back button, another tab) waits for the
 * session's row lock (locked NOWAIT, waited for outside the pool: whenUnlocked) and then finds it
 * complete: from the same buyer (email and card) it answers the same order, from anyone else that
 * the name is gone; neither is charged.
 * The card is authorised while the session and the name are locked, so nobody else can buy the
 * name between the charge and the sale; a decline changes only the session's count of declines.
 */
export async function payForSession(
  deps: CheckoutDeps,
  sessionPublicId: string,
  card: Omit<CardPayment, 'sessionId' | 'amountCents' | 'currency'>,
  buyer: BuyerDetails,
  /** The link this browser last clicked within 30 days (its attribution cookie), if any. */
  referral?: { linkCode: string },
): Promise<PayOutcome> {
  const outcome = await whenUnlocked(() => deps.dataSource.transaction(async (tx): Promise<PayOutcome & { created?: boolean; referralSale?: string; referrer?: string }> => {
    const session = await tx.getRepository(CheckoutSession).createQueryBuilder('s').setLock('pessimistic_write').setOnLocked('nowait').where('s.public_id = :sessionPublicId', { sessionPublicId }).getOne();
    if (!session) return { kind: 'not_found' };
    if (session.status === 'complete') {
      // The same buyer submitting again (a double click, another tab) sees its receipt; anyone
      // else who opened the same link (a shared "Buy now" session) is told the name is gone.
      const paid = await tx.getRepository(CheckoutPayment).findOneBy({ sessionId: session.id });
      const sameBuyer = paid?.buyerEmail.toLowerCase() === buyer.email.toLowerCase() && paid.cardLast4 === card.cardNumber.slice(-4);
      if (!sameBuyer) return { kind: 'unavailable', reason: `${session.domain} has just been bought by another buyer.` };
      const order = await tx.getRepository(Order).findOneByOrFail({ id: session.orderId! });
      return { kind: 'paid', session, orderPublicId: order.publicId };
    }
    if (session.status === 'expired') return { kind: 'expired' };
    if (session.declinedAttempts >= MAX_DECLINED_ATTEMPTS) return { kind: 'too_many_declines' };
    const domain = await tx.getRepository(Domain).createQueryBuilder('d').setLock('pessimistic_write').where('d.id = :id', { id: session.domainId }).getOneOrFail();
    if (domain.status !== 'listed') return { kind: 'unavailable', reason: `${domain.name} has just been ${domain.status === 'sold' ? 'sold' : 'reserved by another buyer'}.` };
    if (domain.buyNowPriceCents !== session.priceCents || domain.currency !== session.currency) return { kind: 'unavailable', reason: `The price of ${domain.name} has changed since this checkout was opened.` };
    const processor = deps.payments[session.environment];
    if (!processor) return { kind: 'no_processor' };

    const auth = await processor.authorize({ ...card, sessionId: session.publicId, amountCents: session.priceCents, currency: session.currency });
    if (!auth.approved) {
      await tx.getRepository(CheckoutSession).increment({ id: session.id }, 'declinedAttempts', 1);
      return { kind: 'declined', reason: auth.reason };
    }
    await tx.getRepository(CheckoutPayment).insert({
      sessionId: session.id,
      processor: auth.processor,
      paymentRef: auth.paymentRef,
      amountCents: session.priceCents,
      currency: session.currency,
      cardLast4: card.cardNumber.slice(-4),
      buyerName: buyer.name,
      buyerEmail: buyer.email,
      registrant: buyer.registrant,
    });
    const sale = await recordSale(tx, {
      partnerId: session.partnerId,
      environment: session.environment,
      domain,
      price: { cents: session.priceCents, currency: session.currency },
      paymentModel: 'service_collected',
      externalPaymentRef: auth.paymentRef,
      checkoutSessionId: session.id,
      clientReferenceId: session.clientReferenceId,
    });
    await tx.getRepository(CheckoutSession).update({ id: session.id }, { status: 'complete', orderId: sale.id, closedAt: () => 'now()' });
    const referred = referral
      ? await recordReferredSale(tx, {
          linkCode: referral.linkCode,
          environment: session.environment,
          sellerPartnerId: session.partnerId,
          orderId: sale.id,
          buyerEmail: buyer.email,
          domain: domain.name,
          amountCents: session.priceCents,
          currency: session.currency,
          at: new Date(),
        })
      : undefined;
    return { kind: 'paid', session: { ...session, status: 'complete', orderId: sale.id }, orderPublicId: sale.publicId, created: true, referralSale: referred?.publicId, referrer: referred?.partnerId };
  }), { giveUpMs: LOCK_WAIT_MS, everyMs: 200 });
  if (!outcome) return { kind: 'busy' };

  if (outcome.kind === 'paid') {
    // After commit, idempotently: the recovery sweep starts any fulfilment a crash left unstarted.
    const order = await deps.dataSource.getRepository(Order).findOneByOrFail({ publicId: outcome.orderPublicId });
    if (outcome.referralSale) await startReferralCommission(deps.workflows, deps.dataSource, outcome.referralSale, outcome.referrer!, order.domain, order.environment);
    if (!order.workflowStarted) {
      await startOrderFulfilment(deps.workflows, { orderId: order.id, orderPublicId: order.publicId, partnerId: order.partnerId, environment: order.environment, domain: order.domain });
      await markWorkflowStarted(deps.dataSource, order.id);
    }
    if (outcome.created) {
      await deps.workflows.client.workflow.getHandle(checkoutWorkflowId(sessionPublicId)).signal(checkoutPaidSignal).catch(() => undefined);
      await notifyEventsAppended(deps.dataSource, deps.workflows, order.partnerId, order.environment);
    }
  }
  return outcome;
}

/**
 * The referred sale's 30-day window, as its own workflow (started once; a retry finds it
 * running), then marked started; the recovery sweep starts any that a crash left unstarted.
 */
export async function startReferralCommission(w: WorkflowStarter, dataSource: DataSource, salePublicId: string, referrerPartnerId: string, domain: string, environment: Environment): Promise<void> {
  await startWorkflow(w, 'referralCommissionWorkflow', {
    workflowId: referralWorkflowId(salePublicId),
    args: [{ salePublicId }],
    mode: 'once',
    summary: `Referral ${salePublicId} ${domain} for partner ${referrerPartnerId} (${environment})`,
    details: "A referred sale's 30-day refund window: its commission is pending, then accrues unless the sale was refunded.",
    attributes: { partnerId: referrerPartnerId, domain, environment, businessStatus: 'pending' },
  });
  await dataSource.getRepository(ReferralSale).update({ publicId: salePublicId, workflowStarted: false }, { workflowStarted: true });
}
