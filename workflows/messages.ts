/**
 * Names shared by workflows and the API: workflow ids, signals, order statuses. Imported by both
 * sides, so it holds no I/O and nothing from src/.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { BrokerageCaseInput } from './brokerage-messages';

/**
 * Order statuses in their order. An order starts at PAYMENT_RECORDED (the partner has charged its
 * buyer) and ends at TRANSFER_COMPLETED, TRANSFER_FAILED or REFUNDED.
 */
/** The header carrying the partner's request id from a workflow's start to its activities (src/temporal/request-context.ts). */
export const REQUEST_ID_HEADER = 'partner-api-request-id';

export const ORDER_STATUSES = [
  'PAYMENT_RECORDED',
  'DOMAIN_LOCKED',
  'TRANSFER_INITIATED',
  'TRANSFER_PENDING',
  'TRANSFER_COMPLETED',
  'TRANSFER_FAILED',
  'REFUNDED',
] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export const FINAL_ORDER_STATUSES: readonly OrderStatus[] = ['TRANSFER_COMPLETED', 'TRANSFER_FAILED', 'REFUNDED'];

/** How long a card payment may stay out with the processor before the recovery sweep asks about it. */
export const STALLED_PAYMENT_SECONDS = 120;

/** The month-end close runs this long after midnight UTC, so the last minute's bookings commit into their month first. */
export const CLOSE_GRACE_MS = 5 * 60 * 1000;

export const quoteWorkflowId = (quotePublicId: string) => `quote:${quotePublicId}`;
export const orderWorkflowId = (orderPublicId: string) => `order:${orderPublicId}`;

/** The order recorded for this quote: the reservation ends with the sale, not with the timer. */
export const quoteConsumedSignal = defineSignal('quoteConsumed');

/** A partner asks to refund the order; the workflow decides (CONTRACT §6). */
export interface RefundRequest {
  /** The id the refund gets if granted (chosen by the first caller). */
  refundPublicId: string;
  reason: string | null;
}

export type RefundDecision = { granted: true; refundPublicId: string } | { granted: false; reason: string };

/**
 * Sent with the fixed Update id REFUND_UPDATE_ID: an order has at most one refund, so a second
 * request attaches to the first one's decision instead of asking again.
 */
/**
 * Sandbox fast-forward (CONTRACT §14): ends the current wait of an object's workflow now, as if its
 * time had passed, and answers which wait ended once the step it leads to is done. Refused (by
 * the update's validator, so nothing is recorded) while the workflow waits on nothing.
 */
export type FastForwardWait = 'quote_expiry' | 'session_expiry' | 'referral_window' | 'brokerage_timer' | 'transfer_deadline';
export const fastForwardUpdate = defineUpdate<FastForwardWait, []>('fastForward');

export const refundUpdate = defineUpdate<RefundDecision, [RefundRequest]>('refund');
export const REFUND_UPDATE_ID = 'refund';

/** Failure types a refund Update's validator rejects with. */
export const REFUND_NOT_ALLOWED = 'RefundNotAllowed';
export const ORDER_ENDED = 'OrderEnded';

/** An operator records the outcome of a transfer carried out by hand (live, no registrar adapter). */
export interface TransferOutcome {
  outcome: 'completed' | 'failed';
  reason: string | null;
}
export const transferOutcomeUpdate = defineUpdate<OrderFulfilmentResult, [TransferOutcome]>('recordTransferOutcome');
export const NOT_AWAITING_OPERATOR = 'NotAwaitingOperator';

/** How the order's transfer is carried out: by a registrar adapter, or by operators by hand. */
export type TransferMode = 'registrar' | 'operator';

/** The live state of an order's fulfilment, for operators (Temporal UI "Queries") and the API. */
export interface FulfilmentState {
  status: OrderStatus;
  mode: TransferMode | null;
  awaitingOperator: boolean;
  refund: { refundPublicId: string; reason: string | null; requestedAt: string; decision: RefundDecision | null } | null;
}
export const fulfilmentStateQuery = defineQuery<FulfilmentState>('state');

export interface QuoteReservationInput {
  quotePublicId: string;
}

export interface OrderFulfilmentInput {
  orderId: string;
  orderPublicId: string;
  /**
   * A hosted-checkout sale: its 30-day refund window runs from this workflow's start (the
   * payment), on this workflow's clock. Absent for partner-collected orders and runs started before it.
   */
  serviceCollected?: boolean;
}

/** The refund window of a service-collected sale (CONTRACT §11): 30 days from payment. */
export const SERVICE_REFUND_WINDOW_MS = 30 * 24 * 60 * 60 * 1000;

export interface OrderFulfilmentResult {
  status: OrderStatus;
  reason?: string;
}

export const webhookWorkflowId = (partnerId: string, environment: string) => `webhooks:${partnerId}:${environment}`;
/** New events were recorded for the partner: wake its delivery workflow. */
export const eventsAppendedSignal = defineSignal('eventsAppended');

export interface WebhookDeliveryInput {
  partnerId: string;
  environment: 'sandbox' | 'live';
}

/** The payouts a payout run made, as GET /payouts shows them. */
export interface PayoutSummary {
  payout_id: string;
  period_start: string;
  period_end: string;
  amount_cents: number;
  currency: string;
  status: 'paid';
  paid_at: string;
  breakdown: { service_collected_cents: number; brokerage_cents: number; referral_cents: number; reversed_cents: number; currency: string };
}

export interface PayoutRunInput {
  environment: 'sandbox' | 'live';
}

export interface PayoutRunResult {
  environment: 'sandbox' | 'live';
  payouts: PayoutSummary[];
}

export interface MonthCloseResult {
  /** Settlements of months before this first-of-month were closed. */
  before?: string;
  closed: number;
  payouts: PayoutSummary[];
}

export const checkoutWorkflowId = (sessionPublicId: string) => `checkout:${sessionPublicId}`;
/** The session was paid: its 7-day wait ends. */
export const checkoutPaidSignal = defineSignal('checkoutPaid');

export interface CheckoutSessionInput {
  sessionPublicId: string;
  /** When the session expires, for a workflow started after the session was opened ("Buy now"); else 7 days from the start. */
  expiresAt?: string;
  /**
   * The time the session had left by the database's clock when its workflow was started ("Buy
   * now"): the timer runs that long from the start, so a Temporal clock that disagrees with the
   * database's neither ends it early nor starts a timer already run out. Runs started before it
   * was sent time `expiresAt` on the workflow's clock.
   */
  lifetimeMs?: number;
}

export const referralWorkflowId = (salePublicId: string) => `referral:${salePublicId}`;

export interface ReferralCommissionInput {
  salePublicId: string;
}

export const emailWorkflowId = (emailId: string) => `email:${emailId}`;
export interface EmailInput {
  emailId: string;
}

export const onboardingWorkflowId = (applicationId: string) => `partner-onboarding:${applicationId}`;
export interface PartnerOnboardingInput {
  applicationId: string;
  /** Where the run starts: an application from the page (`applied`), or a partner made by an operator asking for live. */
  stage?: 'applied' | 'live_requested';
}
export type OnboardingDecision = 'approved' | 'rejected';
export const applicationVerifiedSignal = defineSignal('applicationVerified');
export const liveAccessRequestedSignal = defineSignal('liveAccessRequested');
export const liveAccessDecidedSignal = defineSignal<[OnboardingDecision]>('liveAccessDecided');

export const NONCE_RETENTION_WORKFLOW_ID = 'maintenance:nonce-retention';
export const FULFILMENT_RECOVERY_WORKFLOW_ID = 'maintenance:fulfilment-recovery';
export const MONTH_END_WORKFLOW_ID = 'finance:month-end';

export interface NonceRetentionState {
  prunedTotal: number;
}

/**
 * Every workflow type the worker registers, by name, with its arguments. The API and activities
 * start workflows by name (src/temporal/start.ts) and never import workflow code, so no import
 * circle runs from workflows through activities and back; test/workflows/catalog.test.ts checks
 * this table against the functions workflows/index.ts exports.
 */
export interface WorkflowArgs {
  quoteReservationWorkflow: [QuoteReservationInput];
  orderFulfilmentWorkflow: [OrderFulfilmentInput];
  webhookDeliveryWorkflow: [WebhookDeliveryInput];
  checkoutSessionWorkflow: [CheckoutSessionInput];
  referralCommissionWorkflow: [ReferralCommissionInput];
  brokerageCaseWorkflow: [BrokerageCaseInput];
  nonceRetentionWorkflow: [NonceRetentionState];
  fulfilmentRecoveryWorkflow: [];
  monthEndWorkflow: [];
  monthCloseWorkflow: [{ before?: string }];
  payoutRunWorkflow: [PayoutRunInput];
  sandboxRelistWorkflow: [];
  emailWorkflow: [EmailInput];
  partnerOnboardingWorkflow: [PartnerOnboardingInput];
}
export type WorkflowType = keyof WorkflowArgs;
/** The catalog's names, for checks at run time (the worker's registrations are compared with it). */
export const WORKFLOW_TYPES = [
  'quoteReservationWorkflow',
  'orderFulfilmentWorkflow',
  'webhookDeliveryWorkflow',
  'checkoutSessionWorkflow',
  'referralCommissionWorkflow',
  'brokerageCaseWorkflow',
  'nonceRetentionWorkflow',
  'fulfilmentRecoveryWorkflow',
  'monthEndWorkflow',
  'monthCloseWorkflow',
  'payoutRunWorkflow',
  'sandboxRelistWorkflow',
  'emailWorkflow',
  'partnerOnboardingWorkflow',
] as const satisfies readonly WorkflowType[];
