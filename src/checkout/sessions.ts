/**
 * Hosted checkout sessions (CONTRACT §9). Opening one reserves nothing (seven days would block
 * the market); paying does, in one transaction with the same rules as a quote and an order: the
 * name must still be listed at the price the session showed, the session must be open, and the
 * payment is taken once per session (its row lock, then a unique payment row).
 */
import { queueEmail } from '../mail/outbox';
import { startEmailsOf } from '../mail/start';
import { IsNull, LessThan, MoreThan, type DataSource, type EntityManager } from 'typeorm';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Environment } from '../config';
import { ApiError } from '../api/errors';
import { CardAttemptCheck, CheckoutPayment, CheckoutSession, type CardAttemptOutcome, type PayingDetails } from '../db/entities/checkout-session';
import { Domain } from '../db/entities/domain';
import { Order } from '../db/entities/order';
import { LOCK_TAKEN, whenUnlocked } from '../db/when-unlocked';
import { databaseNow } from '../db/clock';
import { publicId } from '../ids';
import { markWorkflowStarted, recordSale } from '../orders/orders';
import { startOrderFulfilment } from '../orders/start-workflows';
import { startWorkflow, type WorkflowStarter } from '../temporal/start';
import { notifyEventsAppended } from '../webhooks/notify';
import { recordReferredSale } from '../referral/commissions';
import { ReferralSale } from '../db/entities/referral';
import { checkoutPaidSignal, checkoutWorkflowId, referralWorkflowId, STALLED_PAYMENT_SECONDS } from '../../workflows/messages';
import type { CheckoutPageToken } from './page-token';
import type { Authorization, CardPayment, PaymentPort } from './payments';
import { bookCardMoney } from './card-refunds';
import { CheckoutEndsTooSoon, type StripeCheckout } from './stripe';
import { ROW_LOCK } from '../db/row-lock';

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
  /** How long a submit waits for the processor's answer (AUTHORIZE_DEADLINE_MS unless given). */
  authorizeDeadlineMs?: number;
  /** Checkout on the processor's own page (live, Stripe): the buyer pays there, the sale is recorded from its signed event. */
  hosted?: Partial<Record<Environment, StripeCheckout>>;
}

/**
 * How long a submit waits for the card processor's answer before the buyer is told the payment is
 * being confirmed. Well under the sweep's STALLED_PAYMENT_SECONDS, so that the sweep never asks
 * about an attempt whose payer is still waiting; the answer, whenever it comes, is settled all the
 * same (by the submit's process, else by the sweep).
 */
export const AUTHORIZE_DEADLINE_MS = 30_000;

/**
 * A processor that still has no record of an attempt this long after it was given up never will
 * (no request is in flight for a day; processors keep idempotency keys about as long): the
 * recovery sweep stops asking and settles it as never seen.
 */
export const CARD_ATTEMPT_NEVER_SEEN_MS = 24 * 60 * 60 * 1000;

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
  /** "Buy now": the seven-day workflow starts when a buyer first submits the form (sessionWorkflow), so an abandoned press costs a row, not a workflow. */
  deferWorkflow = false,
): Promise<CheckoutSession> {
  const domain = await manager.getRepository(Domain).findOneBy({ environment: input.environment, name: input.domain });
  if (!domain || domain.status === 'unlisted') throw new ApiError('not_found', `${input.domain} is not listed`);
  if (domain.status === 'reserved') throw new ApiError('conflict', `${input.domain} is reserved by an active quote`);
  if (domain.status === 'sold') throw new ApiError('conflict', `${input.domain} has been sold`);
  if (!deps.payments[input.environment] && !deps.hosted?.[input.environment]) throw new ApiError('service_unavailable', `card payments are not available in ${input.environment} yet`);

  const sessionPublicId = publicId('cs');
  // The timer exists before the session does, so no session outlives its seven days.
  if (!deferWorkflow) await startSessionWorkflow(deps, { publicId: sessionPublicId, partnerId: input.partnerId, environment: input.environment, domain: domain.name }, 'fresh');
  const sessions = manager.getRepository(CheckoutSession);
  // Its 7 days on the database's clock, which payment compares with too.
  const now = await databaseNow(manager);
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
        // The last hour on the database's clock, which stamped the sessions' createdAt.
        const hourAgo = new Date((await databaseNow(tx)).getTime() - 60 * 60 * 1000);
        const open = await tx.getRepository(CheckoutSession).findOne({
          // A session that took its last declined card is not handed to the next buyer.
          where: { partnerId: housePartnerId, environment, domain: name, status: 'open', createdAt: MoreThan(hourAgo), declinedAttempts: LessThan(MAX_DECLINED_ATTEMPTS) },
          order: { createdAt: 'DESC' },
        });
        return open ?? (await openSession(deps, { partnerId: housePartnerId, environment, domain: name }, tx, true));
      }),
    { giveUpMs: 5_000, everyMs: 100 },
  );
  if (!session) throw new Error(`"Buy now" for ${name}: its lock stayed taken for 5 s`);
  return session;
}

export async function findSession(dataSource: DataSource, sessionPublicId: string): Promise<CheckoutSession | null> {
  return dataSource.getRepository(CheckoutSession).findOneBy({ publicId: sessionPublicId });
}

/** The session's timer fired: an open session expires; a paid one is left alone; one being paid is waited for. */
export async function expireSession(dataSource: DataSource, sessionPublicId: string): Promise<'expired' | 'complete' | 'absent'> {
  return dataSource.transaction(async (tx) => {
    const session = await tx.getRepository(CheckoutSession).createQueryBuilder('s').setLock(ROW_LOCK).where('s.public_id = :sessionPublicId', { sessionPublicId }).getOne();
    if (!session) return 'absent';
    if (session.status === 'complete') return 'complete';
    // A payment out with the processor is settled first (by its payer, or the recovery sweep
    // within minutes): this step fails and its activity tries again, then finds it complete or open.
    if (session.payingSince) throw new Error(`checkout ${sessionPublicId}: a payment is out with the card processor; the expiry waits for it`);
    if (session.status === 'open') await tx.getRepository(CheckoutSession).update({ id: session.id }, { status: 'expired', closedAt: () => 'now()' });
    return 'expired';
  });
}

export interface BuyerDetails {
  name: string;
  email: string;
  registrant: Record<string, string>;
  /** The paying browser session's digest (browserDigest): the receipt is shown to it alone. */
  browser: string;
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
  | { kind: 'too_many_declines' }
  /** The processor did not answer within the deadline: the attempt stays out and is settled when it answers. */
  | { kind: 'pending'; session: CheckoutSession }
  /** The processor approved only after the attempt was given up: the charge is voided (`confirmed`: done; else the sweep does it). */
  | { kind: 'voided'; confirmed: boolean };

/** Declined cards after which a session takes no more (so it cannot serve to test stolen cards). */
export const MAX_DECLINED_ATTEMPTS = 5;

/** How long a submit waits for another payment of the same session to finish. */
const LOCK_WAIT_MS = 60_000;

/**
 * Pays the session, once, in three steps, so that the card processor is never called inside a
 * database transaction (a slow authorisation holds no pooled connection, and a crash or a failed
 * commit can never leave a charge without a record of it):
 *
 * 1. claim (a short transaction): the session must be open, the name still listed at the price
 *    and currency the session showed; the name is held (reserved) and the session marked paying
 *    with a new attempt number and what to record once approved;
 * 2. authorise, outside any transaction, with `<session_id>:<attempt>` as the processor's
 *    idempotency key;
 * 3. record (a second transaction): the payment, the order, the referred sale; a decline gives
 *    the name back and counts the decline.
 *
 * A crash between 2 and 3 leaves the session paying: settleStalledPayments asks the processor
 * about the attempt and records the sale or voids the charge. A second submit while a payment is
 * out (double click, another tab) waits for it and then finds the session complete: from the
 * same buyer (email and card) it answers the same order, from anyone else that the name is gone;
 * neither is charged.
 */
export async function payForSession(
  deps: CheckoutDeps,
  sessionPublicId: string,
  card: Omit<CardPayment, 'idempotencyKey' | 'amountCents' | 'currency'>,
  buyer: BuyerDetails,
  /** The link this browser last clicked within 30 days (its attribution cookie), if any. */
  referral?: { linkCode: string },
): Promise<PayOutcome> {
  // A "Buy now" session's workflow starts with its first submit (a no-op for every other session).
  const opened = await sessionWithTimeLeft(deps.dataSource, sessionPublicId);
  if (opened?.session.status === 'open') await startSessionWorkflow(deps, opened.session, 'once', { expiresAt: opened.session.expiresAt, lifetimeMs: opened.leftMs });
  const details: PayingDetails = { buyerName: buyer.name, buyerEmail: buyer.email, registrant: buyer.registrant, cardLast4: card.cardNumber.slice(-4), linkCode: referral?.linkCode ?? null, browser: buyer.browser };
  let claim: Claim | undefined;
  for (const giveUp = Date.now() + LOCK_WAIT_MS; !claim || claim.kind === 'in_progress'; ) {
    if (claim && Date.now() > giveUp) return { kind: 'busy' };
    if (claim) await new Promise((resolve) => setTimeout(resolve, 200));
    claim = (await whenUnlocked(() => deps.dataSource.transaction((tx) => claimSession(tx, deps, sessionPublicId, details)), { giveUpMs: LOCK_WAIT_MS, everyMs: 200 })) ?? { kind: 'busy' };
  }
  if (claim.kind !== 'claimed') return claim;

  const { session, attempt, processor } = claim;
  const authorizing = processor.authorize({ ...card, idempotencyKey: paymentKey(session.publicId, attempt), amountCents: session.priceCents, currency: session.currency });
  let deadline: NodeJS.Timeout | undefined;
  const answer = await Promise.race([
    authorizing,
    new Promise<'no_answer'>((resolve) => {
      deadline = setTimeout(() => resolve('no_answer'), deps.authorizeDeadlineMs ?? AUTHORIZE_DEADLINE_MS);
    }),
  ]).finally(() => clearTimeout(deadline));
  if (answer === 'no_answer') {
    // The attempt stays out, the name held: its answer, whenever it comes, is settled here (or by
    // the recovery sweep, should this process be gone by then). The buyer is told to wait.
    authorizing.then((late) => settleAnswer(deps, session, attempt, late, buyer.browser)).catch(() => undefined);
    return { kind: 'pending', session };
  }
  return settleAnswer(deps, session, attempt, answer, buyer.browser);
}

/**
 * The processor's answer to one attempt, recorded: a decline gives the name back; an approval
 * becomes the sale, unless the attempt was given up meanwhile (the sweep found it out too long),
 * when it is that sale only if the sweep recorded this very charge, and is otherwise voided at once.
 */
async function settleAnswer(deps: CheckoutDeps, session: CheckoutSession, attempt: number, auth: Authorization, browser: string): Promise<PayOutcome> {
  if (!auth.approved) {
    await releaseClaim(deps.dataSource, session.publicId, attempt, 'declined');
    return { kind: 'declined', reason: auth.reason };
  }
  const recorded = await recordPaidSession(deps.dataSource, session.publicId, attempt, auth);
  if (recorded.kind === 'paid') {
    await afterPaid(deps, recorded);
    return { kind: 'paid', session: recorded.session, orderPublicId: recorded.orderPublicId };
  }
  const paid = await deps.dataSource.getRepository(CheckoutPayment).findOneBy({ paymentRef: auth.paymentRef });
  if (paid) {
    // The sweep recorded this attempt's charge from the processor's answer: it is this buyer's order.
    const now = await deps.dataSource.getRepository(CheckoutSession).findOneByOrFail({ id: paid.sessionId });
    const order = await deps.dataSource.getRepository(Order).findOneByOrFail({ id: now.orderId! });
    return { kind: 'paid', session: now, orderPublicId: order.publicId };
  }
  return { kind: 'voided', confirmed: await voidUnrecorded(deps, session, attempt, auth.paymentRef, browser) };
}

/**
 * Voids an approval that no sale records (its attempt was given up), and settles the attempt's
 * check; when the void fails, the attempt is left for the recovery sweep to ask about and void.
 * Answers whether the charge is voided now.
 */
async function voidUnrecorded(deps: Pick<CheckoutDeps, 'dataSource' | 'payments'>, session: Pick<CheckoutSession, 'id' | 'publicId' | 'environment'>, attempt: number, paymentRef: string, browser: string | null): Promise<boolean> {
  const key = paymentKey(session.publicId, attempt);
  await followUpAttempt(deps.dataSource.manager, session, key, browser);
  try {
    await deps.payments[session.environment]!.void(paymentRef);
  } catch {
    return false;
  }
  await settleAttemptCheck(deps.dataSource, key, 'voided');
  return true;
}

/** Keeps an attempt given up before its answer was known, to be asked again (once per attempt). */
async function followUpAttempt(manager: EntityManager, session: Pick<CheckoutSession, 'id' | 'environment'>, idempotencyKey: string, browser: string | null | undefined): Promise<void> {
  await manager.getRepository(CardAttemptCheck).createQueryBuilder().insert().values({ sessionId: session.id, environment: session.environment, idempotencyKey, browser: browser ?? null }).orIgnore().execute();
}

async function settleAttemptCheck(dataSource: DataSource, idempotencyKey: string, outcome: CardAttemptOutcome): Promise<void> {
  await dataSource.getRepository(CardAttemptCheck).update({ idempotencyKey, resolvedAt: IsNull() }, { resolvedAt: () => 'now()', outcome });
}

/**
 * The sweep's second look at attempts given up before the processor answered: each is asked
 * again; a decline or a void settles it, an approval that no sale records is voided, an
 * approval that one does is that sale's, and a processor that still has no record of it after
 * CARD_ATTEMPT_NEVER_SEEN_MS never charged it. Answers how many were settled this round.
 */
export async function checkCardAttempts(
  deps: Pick<CheckoutDeps, 'dataSource' | 'payments'>,
  onEach: () => void = () => undefined,
  onFailed: (idempotencyKey: string, err: Error) => void = () => undefined,
): Promise<number> {
  // Least recently asked first, so that one the processor keeps failing on never holds back the rest.
  const checks = await deps.dataSource.getRepository(CardAttemptCheck).find({ where: { resolvedAt: IsNull() }, order: { lastAskedAt: { direction: 'ASC', nulls: 'FIRST' }, releasedAt: 'ASC' }, take: 100 });
  let settled = 0;
  for (const check of checks) {
    onEach();
    const processor = deps.payments[check.environment];
    if (!processor) continue;
    try {
      if (await checkCardAttempt(deps, processor, check)) settled++;
    } catch (err) {
      onFailed(check.idempotencyKey, err as Error);
      await deps.dataSource.getRepository(CardAttemptCheck).update({ id: check.id }, { asks: () => 'asks + 1', lastAskedAt: () => 'now()' });
    }
  }
  return settled;
}

/** One attempt asked again; answers whether it is settled now. */
async function checkCardAttempt(deps: Pick<CheckoutDeps, 'dataSource' | 'payments'>, processor: PaymentPort, check: CardAttemptCheck): Promise<boolean> {
  const auth = await processor.retrieve(check.idempotencyKey);
  let outcome: CardAttemptOutcome | undefined;
  if (!auth) {
    const { raw } = await deps.dataSource
      .getRepository(CardAttemptCheck)
      .createQueryBuilder()
      .update()
      .set({ asks: () => 'asks + 1', lastAskedAt: () => 'now()' })
      .where('id = :id', { id: check.id })
      .returning(`released_at < now() - make_interval(secs => ${CARD_ATTEMPT_NEVER_SEEN_MS / 1000}) AS never_seen`)
      .execute();
    if ((raw as Array<{ never_seen: boolean }>)[0]?.never_seen) outcome = 'never_seen';
  } else if (!auth.approved) outcome = 'declined';
  else if (auth.voided) outcome = 'voided';
  else if (await deps.dataSource.getRepository(CheckoutPayment).existsBy({ paymentRef: auth.paymentRef })) outcome = 'recorded';
  else {
    await processor.void(auth.paymentRef);
    outcome = 'voided';
  }
  if (!outcome) return false;
  await settleAttemptCheck(deps.dataSource, check.idempotencyKey, outcome);
  return true;
}

/** A session and the milliseconds it has left by the database's clock (which decides lateness). */
async function sessionWithTimeLeft(dataSource: DataSource, sessionPublicId: string): Promise<{ session: CheckoutSession; leftMs: number } | null> {
  const { entities, raw } = await dataSource
    .getRepository(CheckoutSession)
    .createQueryBuilder('s')
    .addSelect('floor(extract(epoch FROM s.expires_at - now()) * 1000)::float8', 'left_ms')
    .where('s.public_id = :sessionPublicId', { sessionPublicId })
    .getRawAndEntities<{ left_ms: number }>();
  const leftMs = Number(raw[0]?.left_ms);
  // expires_at is never null; a value that is not a number would start a 1 ms timer, so it throws.
  if (entities[0] && !Number.isFinite(leftMs)) throw new Error(`checkout ${sessionPublicId}: no time left could be read (${String(raw[0]?.left_ms)})`);
  return entities[0] ? { session: entities[0], leftMs } : null;
}

/**
 * The session's workflow: its expiry timer (the time the session has left, 7 days unless given),
 * then a paid sale's refund window. `once`: a workflow already started (or ended) for the session
 * is kept.
 */
async function startSessionWorkflow(
  deps: Pick<CheckoutDeps, 'workflows'>,
  session: Pick<CheckoutSession, 'publicId' | 'partnerId' | 'environment' | 'domain'>,
  mode: 'fresh' | 'once',
  ends?: { expiresAt: Date; lifetimeMs: number },
): Promise<void> {
  await startWorkflow(deps.workflows, 'checkoutSessionWorkflow', {
    workflowId: checkoutWorkflowId(session.publicId),
    args: [{ sessionPublicId: session.publicId, ...(ends ? { expiresAt: ends.expiresAt.toISOString(), lifetimeMs: ends.lifetimeMs } : {}) }],
    mode,
    summary: `Checkout ${session.publicId} ${session.domain} for partner ${session.partnerId} (${session.environment})`,
    details: 'A hosted checkout session: open for 7 days, then expired unless the buyer paid.',
    attributes: { partnerId: session.partnerId, domain: session.domain, environment: session.environment, businessStatus: 'open' },
  });
}

/** The processor's idempotency key of a session's payment attempt. */
export const paymentKey = (sessionPublicId: string, attempt: number) => `${sessionPublicId}:${attempt}`;

type Claim = Exclude<PayOutcome, { kind: 'paid' }> | { kind: 'paid'; session: CheckoutSession; orderPublicId: string } | { kind: 'in_progress' } | { kind: 'claimed'; session: CheckoutSession; attempt: number; processor: PaymentPort };

/** Step 1: holds the name and marks the session paying, or says why it cannot be paid. */
async function claimSession(tx: EntityManager, deps: CheckoutDeps, sessionPublicId: string, details: PayingDetails, mode: 'card' | 'hosted' = 'card'): Promise<Claim> {
  const sessions = tx.getRepository(CheckoutSession);
  const { entities, raw } = await sessions
    .createQueryBuilder('s')
    // The database's clock decides lateness, as for quotes: a session past its 7 days takes no
    // payment even while its workflow's timer is late.
    .addSelect('s.expires_at <= now()', 'past_expiry')
    .setLock(ROW_LOCK)
    .setOnLocked('nowait')
    .where('s.public_id = :sessionPublicId', { sessionPublicId })
    .getRawAndEntities<{ past_expiry: boolean }>();
  const session = entities[0];
  if (!session) return { kind: 'not_found' };
  if (session.status === 'complete') {
    // The same browser submitting again (a double click, another tab) sees its receipt; anyone
    // else who opened the same link (a shared "Buy now" session), even knowing the buyer's email
    // and card digits, is told the name is gone.
    const paid = await tx.getRepository(CheckoutPayment).findOneBy({ sessionId: session.id });
    const sameBuyer = !!paid?.payerBrowser && paid.payerBrowser === details.browser;
    if (!sameBuyer) return { kind: 'unavailable', reason: `${session.domain} has just been bought by another buyer.` };
    const order = await tx.getRepository(Order).findOneByOrFail({ id: session.orderId! });
    return { kind: 'paid', session, orderPublicId: order.publicId };
  }
  if (session.payingSince) return { kind: 'in_progress' };
  if (session.status === 'expired' || raw[0].past_expiry) return { kind: 'expired' };
  if (session.declinedAttempts >= MAX_DECLINED_ATTEMPTS) return { kind: 'too_many_declines' };
  const processor = deps.payments[session.environment];
  // A card is taken only where a card processor is; a hosted attempt only where its processor is.
  if (mode === 'card' ? !processor : !deps.hosted?.[session.environment]) return { kind: 'no_processor' };
  const domain = await tx.getRepository(Domain).createQueryBuilder('d').setLock(ROW_LOCK).where('d.id = :id', { id: session.domainId }).getOneOrFail();
  if (domain.status !== 'listed') return { kind: 'unavailable', reason: `${domain.name} has just been ${domain.status === 'sold' ? 'sold' : 'reserved by another buyer'}.` };
  if (domain.buyNowPriceCents !== session.priceCents || domain.currency !== session.currency) return { kind: 'unavailable', reason: `The price of ${domain.name} has changed since this checkout was opened.` };
  // Held while the card is out: reserved with no quote (no quote, order or other checkout takes it).
  await tx.getRepository(Domain).update({ id: domain.id }, { status: 'reserved' });
  const attempt = session.paymentAttempt + 1;
  await sessions.update({ id: session.id }, { paymentAttempt: attempt, payingSince: () => 'now()', payingDetails: details });
  return { kind: 'claimed', session: { ...session, paymentAttempt: attempt }, attempt, processor: processor! };
}

/**
 * A payment attempt that did not go through: the name is listed again and the session open (a
 * decline is counted). `no_answer`: the processor had not answered; the attempt is kept to be
 * asked again (checkCardAttempts), so this release is never final about the card.
 */
async function releaseClaim(dataSource: DataSource, sessionPublicId: string, attempt: number, why: 'declined' | 'not_charged' | 'no_answer'): Promise<boolean> {
  return dataSource.transaction(async (tx) => {
    const session = await tx.getRepository(CheckoutSession).createQueryBuilder('s').setLock(ROW_LOCK).where('s.public_id = :sessionPublicId', { sessionPublicId }).getOne();
    if (!session?.payingSince || session.paymentAttempt !== attempt) return false;
    await tx
      .getRepository(Domain)
      .createQueryBuilder()
      .update()
      .set({ status: 'listed' })
      .where("id = :id AND status = 'reserved' AND reserved_by_quote_id IS NULL", { id: session.domainId })
      .execute();
    await tx.getRepository(CheckoutSession).update(
      { id: session.id },
      {
        payingSince: null,
        payingDetails: null,
        // Its 7 days may have ended while the card was out (the workflow's timer left it open).
        status: () => "CASE WHEN expires_at <= now() THEN 'expired' ELSE status END",
        closedAt: () => 'CASE WHEN expires_at <= now() THEN now() ELSE closed_at END',
        ...(why === 'declined' ? { declinedAttempts: () => 'declined_attempts + 1' } : {}),
      },
    );
    if (why === 'no_answer') await followUpAttempt(tx, session, paymentKey(session.publicId, attempt), session.payingDetails?.browser);
    return true;
  });
}

/** The business event of a checkout's receipt: one per session. */
export const receiptEmailKey = (sessionPublicId: string) => `checkout-receipt:${sessionPublicId}`;

type Recorded = { kind: 'paid'; session: CheckoutSession; orderPublicId: string; orderId: string; referralSale?: string; referrer?: string } | { kind: 'stale' };

/**
 * Step 3: the approved attempt recorded: the payment, the sale (the order at the session's price,
 * which starts the same fulfilment), the card's money in the ledger, the referred sale. `stale`
 * when the attempt is no longer the one out (the sweep or the payer resolved it first).
 */
async function recordPaidSession(dataSource: DataSource, sessionPublicId: string, attempt: number, auth: Extract<Authorization, { approved: true }>): Promise<Recorded> {
  return dataSource.transaction(async (tx): Promise<Recorded> => {
    const session = await tx.getRepository(CheckoutSession).createQueryBuilder('s').setLock(ROW_LOCK).where('s.public_id = :sessionPublicId', { sessionPublicId }).getOne();
    if (!session?.payingSince || session.paymentAttempt !== attempt || !session.payingDetails) return { kind: 'stale' };
    const details = session.payingDetails;
    const domain = await tx.getRepository(Domain).createQueryBuilder('d').setLock(ROW_LOCK).where('d.id = :id', { id: session.domainId }).getOneOrFail();
    await tx.getRepository(CheckoutPayment).insert({
      sessionId: session.id,
      processor: auth.processor,
      paymentRef: auth.paymentRef,
      amountCents: session.priceCents,
      currency: session.currency,
      cardLast4: details.cardLast4,
      buyerName: details.buyerName,
      buyerEmail: details.buyerEmail,
      registrant: details.registrant,
      payerBrowser: details.browser ?? null,
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
    await bookCardMoney(tx, 'card_payment', { partnerId: session.partnerId, environment: session.environment, paymentRef: auth.paymentRef, amountCents: session.priceCents, currency: session.currency });
    // The buyer's receipt, owed from this commit on (sent by its own workflow: mail never holds the sale).
    await queueEmail(tx, {
      key: receiptEmailKey(session.publicId),
      kind: 'checkout_receipt',
      to: details.buyerEmail,
      data: { domain: domain.name, priceCents: session.priceCents, currency: session.currency, orderId: sale.publicId, sandbox: session.environment === 'sandbox' },
      ...(session.environment === 'sandbox' ? { sandboxPartnerId: session.partnerId } : {}),
    });
    await tx.getRepository(CheckoutSession).update({ id: session.id }, { status: 'complete', orderId: sale.id, closedAt: () => 'now()', payingSince: null, payingDetails: null });
    const referred = details.linkCode
      ? await recordReferredSale(tx, {
          linkCode: details.linkCode,
          environment: session.environment,
          sellerPartnerId: session.partnerId,
          orderId: sale.id,
          buyerEmail: details.buyerEmail,
          domain: domain.name,
          amountCents: session.priceCents,
          currency: session.currency,
          at: new Date(),
        })
      : undefined;
    return { kind: 'paid', session: { ...session, status: 'complete', orderId: sale.id, payingSince: null, payingDetails: null }, orderPublicId: sale.publicId, orderId: sale.id, referralSale: referred?.publicId, referrer: referred?.partnerId };
  });
}

/**
 * Tells the session's workflow it was paid (it stops waiting out the 7 days and holds the sale's
 * refund window, counted from the payment's recorded time), then marks the session told. A
 * workflow that has ended needs nothing: marked too. Any other failure leaves the session
 * unmarked and is thrown; the recovery sweep signals it again (unsignalledPaidSessions), so the
 * signal is delivered however often it is lost.
 */
export async function signalCheckoutPaid(w: WorkflowStarter, dataSource: DataSource, sessionPublicId: string): Promise<void> {
  try {
    await w.client.workflow.getHandle(checkoutWorkflowId(sessionPublicId)).signal(checkoutPaidSignal);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  await dataSource.getRepository(CheckoutSession).update({ publicId: sessionPublicId, paidSignalledAt: IsNull() }, { paidSignalledAt: () => 'now()' });
}

/** Paid sessions whose workflow has not been told for `olderThanSeconds` (a lost signal), oldest first, at most 100. */
export async function unsignalledPaidSessions(dataSource: DataSource, olderThanSeconds: number): Promise<CheckoutSession[]> {
  return dataSource
    .getRepository(CheckoutSession)
    .createQueryBuilder('s')
    .where("s.status = 'complete' AND s.paid_signalled_at IS NULL")
    .andWhere('s.closed_at < now() - make_interval(secs => :olderThanSeconds)', { olderThanSeconds })
    .orderBy('s.closed_at', 'ASC')
    .limit(100)
    .getMany();
}

/** After the record commits, idempotently (the recovery sweep starts whatever a crash left unstarted). */
async function afterPaid(deps: Pick<CheckoutDeps, 'dataSource' | 'workflows'>, recorded: Extract<Recorded, { kind: 'paid' }>): Promise<void> {
  const order = await deps.dataSource.getRepository(Order).findOneByOrFail({ id: recorded.orderId });
  if (recorded.referralSale) await startReferralCommission(deps.workflows, deps.dataSource, recorded.referralSale, recorded.referrer!, order.domain, order.environment);
  if (!order.workflowStarted) {
    await startOrderFulfilment(deps.workflows, { orderId: order.id, orderPublicId: order.publicId, partnerId: order.partnerId, environment: order.environment, domain: order.domain, serviceCollected: true });
    await markWorkflowStarted(deps.dataSource, order.id);
  }
  // A signal lost here is sent again by the recovery sweep; the buyer's payment stands either way.
  await signalCheckoutPaid(deps.workflows, deps.dataSource, recorded.session.publicId).catch(() => undefined);
  // So is the receipt's start (the sweep starts a pending email's workflow after a minute).
  await startEmailsOf(deps.workflows, deps.dataSource, [receiptEmailKey(recorded.session.publicId)]).catch(() => undefined);
  await notifyEventsAppended(deps.dataSource, deps.workflows, order.partnerId, order.environment);
}


/** Sessions whose payment has been out with the processor for longer than `olderThanSeconds` (a crash between authorising and recording), oldest first. */
export async function stalledPayments(dataSource: DataSource, olderThanSeconds: number = STALLED_PAYMENT_SECONDS): Promise<CheckoutSession[]> {
  return dataSource
    .getRepository(CheckoutSession)
    .createQueryBuilder('s')
    .where('s.paying_since < now() - make_interval(secs => :olderThanSeconds)', { olderThanSeconds })
    // A hosted attempt (live) stays out while the buyer is on the processor's page (up to its
    // expiry); its processor's events settle it, not this card sweep.
    .andWhere("(s.paying_details->>'hosted') IS DISTINCT FROM 'true'")
    .orderBy('s.paying_since', 'ASC')
    .limit(100)
    .getMany();
}

/**
 * The sweep's step for a payment left out (a crash between authorising and recording, or a
 * processor slower than the submit's deadline and the sweep's threshold): asks the processor
 * about the attempt and records the sale (approved), or gives the name back (declined, voided,
 * or no answer yet, when the attempt is kept to be asked again until the processor answers); an
 * approval that can no longer be recorded is voided, so no buyer is charged without an order.
 */
export async function settleStalledPayment(deps: Pick<CheckoutDeps, 'dataSource' | 'payments'>, session: CheckoutSession): Promise<'recorded' | 'released' | 'voided' | 'resolved'> {
  const processor = deps.payments[session.environment];
  if (!processor) throw new Error(`no card processor for ${session.environment}`);
  const attempt = session.paymentAttempt;
  const auth = await processor.retrieve(paymentKey(session.publicId, attempt));
  if (!auth || !auth.approved || auth.voided) {
    const why = !auth ? 'no_answer' : !auth.approved ? 'declined' : 'not_charged';
    return (await releaseClaim(deps.dataSource, session.publicId, attempt, why)) ? 'released' : 'resolved';
  }
  const recorded = await recordPaidSession(deps.dataSource, session.publicId, attempt, auth);
  if (recorded.kind === 'paid') return 'recorded';
  // The attempt was resolved meanwhile: recorded by its payer (this charge is the order's), or
  // given back, when this approval is no sale's and is voided.
  const paid = await deps.dataSource.getRepository(CheckoutPayment).findOneBy({ paymentRef: auth.paymentRef });
  if (paid) return 'resolved';
  if (!(await voidUnrecorded(deps, session, attempt, auth.paymentRef, session.payingDetails?.browser ?? null))) throw new Error(`checkout ${session.publicId}: the approval ${auth.paymentRef} could not be voided yet; it is asked about again`);
  return 'voided';
}

/**
 * Live checkout on the processor's own page: the session is claimed as for a card (its name held,
 * a new attempt with the buyer's details and browser) and the attempt opened at the processor
 * (src/checkout/stripe.ts); the buyer is sent there. The sale is recorded from the processor's
 * signed event (recordHostedPayment), never from the buyer's return. Answers where to send the
 * buyer, or why the session cannot be paid.
 */
export async function startHostedPayment(
  deps: CheckoutDeps,
  sessionPublicId: string,
  buyer: BuyerDetails,
  urls: { returnUrl: string; cancelUrl: string },
  referral?: { linkCode: string },
): Promise<{ kind: 'redirect'; url: string } | PayOutcome> {
  const opened = await sessionWithTimeLeft(deps.dataSource, sessionPublicId);
  if (opened?.session.status === 'open') await startSessionWorkflow(deps, opened.session, 'once', { expiresAt: opened.session.expiresAt, lifetimeMs: opened.leftMs });
  const details: PayingDetails = { buyerName: buyer.name, buyerEmail: buyer.email, registrant: buyer.registrant, cardLast4: '0000', linkCode: referral?.linkCode ?? null, browser: buyer.browser, hosted: true };
  const claim = (await whenUnlocked(() => deps.dataSource.transaction((tx) => claimSession(tx, deps, sessionPublicId, details, 'hosted')), { giveUpMs: LOCK_WAIT_MS, everyMs: 200 })) ?? { kind: 'busy' as const };
  if (claim.kind === 'in_progress') return { kind: 'busy' };
  if (claim.kind !== 'claimed') return claim;
  const { session, attempt } = claim;
  try {
    const { url, id } = await deps.hosted![session.environment]!.startAttempt({
      idempotencyKey: paymentKey(session.publicId, attempt),
      sessionPublicId: session.publicId,
      attempt,
      domain: session.domain,
      amountCents: session.priceCents,
      currency: session.currency,
      buyerEmail: buyer.email,
      returnUrl: urls.returnUrl,
      cancelUrl: urls.cancelUrl,
      expiresAt: session.expiresAt,
    });
    // Kept with the attempt (while it is still the one out), so that the sweep can ask the processor about it.
    await deps.dataSource
      .getRepository(CheckoutSession)
      .createQueryBuilder()
      .update()
      .set({ payingDetails: { ...details, processorSessionId: id } })
      .where('id = :id AND payment_attempt = :attempt AND paying_since IS NOT NULL', { id: session.id, attempt })
      .execute();
    return { kind: 'redirect', url };
  } catch (err) {
    // Nothing was opened at the processor (a create that failed is one it never charges): the name goes back.
    await releaseClaim(deps.dataSource, session.publicId, attempt, 'not_charged');
    if (err instanceof CheckoutEndsTooSoon) return { kind: 'expired' };
    throw err;
  }
}

/** A buyer back from the processor's page without paying ("Cancel"): this browser's hosted attempt is given back (a payment that still arrives for it is refunded). */
export async function cancelHostedAttempt(dataSource: DataSource, sessionPublicId: string, browser: string): Promise<void> {
  const session = await findSession(dataSource, sessionPublicId);
  if (!session?.payingSince || !session.payingDetails?.hosted || session.payingDetails.browser !== browser) return;
  await releaseClaim(dataSource, sessionPublicId, session.paymentAttempt, 'not_charged');
}

/** What became of a processor's event about a hosted attempt. */
export type HostedOutcome = 'recorded' | 'duplicate' | 'refused_amount' | 'refunded_stale' | 'released' | 'ignored';

/**
 * A hosted attempt's outcome from the processor's verified event: a paid one is recorded as the
 * sale, once, for the session's amount and currency only (another amount or currency is refunded
 * and never recorded); one that arrives after its attempt was given up is refunded; an expired
 * one gives the name back.
 */
export async function recordHostedPayment(
  /** Without `workflows` (the sweep), the sale's workflows are started and signalled by the sweep's own steps. */
  deps: Pick<CheckoutDeps, 'dataSource' | 'hosted'> & Partial<CheckoutDeps>,
  event: { kind: 'paid' | 'expired'; sessionPublicId: string; attempt: number; paymentRef: string | null; amountCents: number | null; currency: string | null },
  log: (message: string, fields: Record<string, unknown>) => void,
): Promise<HostedOutcome> {
  const session = await findSession(deps.dataSource, event.sessionPublicId);
  const hosted = session && deps.hosted?.[session.environment];
  if (!session || !hosted || !Number.isInteger(event.attempt)) return 'ignored';
  if (event.kind === 'expired') return (await releaseClaim(deps.dataSource, session.publicId, event.attempt, 'not_charged')) ? 'released' : 'ignored';
  if (!event.paymentRef) return 'ignored';
  if (event.amountCents !== session.priceCents || event.currency?.toUpperCase() !== session.currency) {
    // Never recorded: the buyer gets it all back, and operators are told.
    await hosted.refund(event.paymentRef, event.amountCents ?? 0, `mismatch:${event.paymentRef}`);
    await releaseClaim(deps.dataSource, session.publicId, event.attempt, 'not_charged');
    log('operator_action_needed: a processor payment of another amount or currency than its checkout was refunded', { session_id: session.publicId, payment_ref: event.paymentRef, amount_cents: event.amountCents, currency: event.currency, expected_cents: session.priceCents, expected_currency: session.currency });
    return 'refused_amount';
  }
  const recorded = await recordPaidSession(deps.dataSource, session.publicId, event.attempt, { approved: true, paymentRef: event.paymentRef, processor: hosted.name });
  if (recorded.kind === 'paid') {
    if (deps.workflows) await afterPaid({ dataSource: deps.dataSource, workflows: deps.workflows }, recorded);
    return 'recorded';
  }
  if (await deps.dataSource.getRepository(CheckoutPayment).existsBy({ paymentRef: event.paymentRef })) return 'duplicate';
  // Its attempt was given up (cancelled, expired, or another paid): no order takes this payment.
  await hosted.refund(event.paymentRef, session.priceCents, `stale:${event.paymentRef}`);
  return 'refunded_stale';
}

/** How long a hosted attempt may stay out before the sweep asks the processor (its events normally arrive within seconds). */
export const HOSTED_STALLED_SECONDS = 10 * 60;

/**
 * The sweep's look at hosted attempts out for longer than `olderThanSeconds` (their events lost or
 * late): each is asked of the processor by its Checkout Session and settled as its event would
 * have (paid: recorded, or refunded when of another amount; expired: released); one still open is
 * left to its own expiry (at most 24 hours), one never opened there (a crash before its id was
 * kept) is released once a day has passed. Answers how many were settled.
 */
export async function settleHostedAttempts(
  deps: Pick<CheckoutDeps, 'dataSource' | 'hosted'>,
  olderThanSeconds: number,
  log: (message: string, fields: Record<string, unknown>) => void,
  onEach: () => void = () => undefined,
): Promise<number> {
  const out = await deps.dataSource
    .getRepository(CheckoutSession)
    .createQueryBuilder('s')
    .where("(s.paying_details->>'hosted') = 'true'")
    .andWhere('s.paying_since < now() - make_interval(secs => :olderThanSeconds)', { olderThanSeconds })
    .orderBy('s.paying_since', 'ASC')
    .limit(100)
    .getMany();
  let settled = 0;
  for (const session of out) {
    onEach();
    const hosted = deps.hosted?.[session.environment];
    const processorSessionId = session.payingDetails?.processorSessionId;
    if (!hosted) continue;
    if (!processorSessionId) {
      if (session.payingSince && session.payingSince.getTime() < Date.now() - 24 * 60 * 60 * 1000 && (await releaseClaim(deps.dataSource, session.publicId, session.paymentAttempt, 'not_charged'))) settled++;
      continue;
    }
    const state = await hosted.retrieveAttempt(processorSessionId);
    if (state.status === 'open') continue;
    const outcome = await recordHostedPayment(
      deps,
      { kind: state.status === 'complete' && state.paid ? 'paid' : 'expired', sessionPublicId: session.publicId, attempt: session.paymentAttempt, paymentRef: state.paymentRef, amountCents: state.amountCents, currency: state.currency },
      log,
    );
    if (outcome !== 'ignored') settled++;
  }
  return settled;
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
