import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { BrokerageCase, BrokerageTimelineEntry } from './entities/brokerage-case';
import { AdmissionEpoch, AdmissionStore, RateLimitBucket, RequestNonce } from './entities/admission';
import { CardAttemptCheck, CheckoutPayment, CheckoutSession } from './entities/checkout-session';
import { Credential } from './entities/credential';
import { Domain } from './entities/domain';
import { IdempotencyKey } from './entities/idempotency-key';
import { LedgerEntry } from './entities/ledger-entry';
import { LedgerPosting } from './entities/ledger-posting';
import { Payout, PayoutLine } from './entities/payout';
import { Settlement } from './entities/settlement';
import { Order } from './entities/order';
import { OrderTimelineEntry } from './entities/order-timeline-entry';
import { Partner } from './entities/partner';
import { ReferralCheckout, ReferralClick, ReferralLink, ReferralSale } from './entities/referral';
import { EventCounter, PartnerEvent } from './entities/partner-event';
import { Quote } from './entities/quote';
import { Refund } from './entities/refund';
import { SaleTransaction } from './entities/sale-transaction';
import { SandboxTransfer } from './entities/sandbox-transfer';
import { SandboxCharge, SandboxRefund } from './entities/sandbox-charge';
import { PartnerQuota } from './entities/partner-quota';
import { WebhookDelivery } from './entities/webhook-delivery';
import { WebhookEndpoint } from './entities/webhook-endpoint';
import { Foundation1795000000000 } from './migrations/1795000000000-foundation';
import { Orders1795000100000 } from './migrations/1795000100000-orders';
import { Webhooks1795000200000 } from './migrations/1795000200000-webhooks';
import { Search1795000300000 } from './migrations/1795000300000-search';
import { OrderIntegrity1795000400000 } from './migrations/1795000400000-order-integrity';
import { Hardening1795000500000 } from './migrations/1795000500000-hardening';
import { Ledger1795000600000 } from './migrations/1795000600000-ledger';
import { Checkout1795000700000 } from './migrations/1795000700000-checkout';
import { Brokerage1795000800000 } from './migrations/1795000800000-brokerage';
import { Referral1795000900000 } from './migrations/1795000900000-referral';
import { ReferralRecovery1795000950000 } from './migrations/1795000950000-referral-recovery';
import { HotPath1795001000000 } from './migrations/1795001000000-hot-path';
import { AdmissionBatches1795001100000 } from './migrations/1795001100000-admission-batches';
import { AdmissionLockOrder1795001200000 } from './migrations/1795001200000-admission-lock-order';
import { AdmissionInline1795001300000 } from './migrations/1795001300000-admission-inline';
import { ChangeFeed1795001400000 } from './migrations/1795001400000-change-feed';
import { AdmissionStore1795001500000 } from './migrations/1795001500000-admission-store';
import { ListingNotifySize1795001600000 } from './migrations/1795001600000-listing-notify-size';
import { IdempotentReplayBytes1795001700000 } from './migrations/1795001700000-idempotent-replay-bytes';
import { CheckoutDeclines1795001800000 } from './migrations/1795001800000-checkout-declines';
import { DeliveryIdle1795001900000 } from './migrations/1795001900000-delivery-idle';
import { SettlementCurrency1795002000000 } from './migrations/1795002000000-settlement-currency';
import { CardPayments1795002100000 } from './migrations/1795002100000-card-payments';
import { PartnerQuotas1795002200000 } from './migrations/1795002200000-partner-quotas';
import { BoundedClicksStoreId1795002300000 } from './migrations/1795002300000-bounded-clicks-store-id';
import { OperatorActions1795002400000 } from './migrations/1795002400000-operator-actions';
import { EventRequestId1795002500000 } from './migrations/1795002500000-event-request-id';
import { WebhookSecretRotation1795002600000 } from './migrations/1795002600000-webhook-secret-rotation';
import { AdmissionRateLimitState1795002700000 } from './migrations/1795002700000-admission-rate-limit-state';
import { PaidSignal1795002800000 } from './migrations/1795002800000-paid-signal';
import { CardAttemptChecks1795002900000 } from './migrations/1795002900000-card-attempt-checks';
import { LegacyCardPayments1795003000000 } from './migrations/1795003000000-legacy-card-payments';
import { ProcessorEvents1795003100000 } from './migrations/1795003100000-processor-events';
import { ProcessorEvent } from './entities/processor-event';
import { CardDispute } from './entities/card-dispute';
import { CardDisputes1795003200000 } from './migrations/1795003200000-card-disputes';
import { OperatorAction } from './entities/operator-action';
import { Email } from './entities/email';
import { PartnerApplication } from './entities/partner-application';
import { OnboardingEmail1795003300000 } from './migrations/1795003300000-onboarding-email';
import { LateDeliveryOrder1795003400000 } from './migrations/1795003400000-late-delivery-order';
import { WorkerRelease } from './entities/worker-release';
import { WorkerReleases1795003500000 } from './migrations/1795003500000-worker-releases';
import { LeastPrivilege1795003600000 } from './migrations/1795003600000-least-privilege';
import { AuditTrail1795003700000 } from './migrations/1795003700000-audit-trail';
import { UiGateRole1795003800000 } from './migrations/1795003800000-ui-gate-role';
import { AdmissionWholeBurst1795003900000 } from './migrations/1795003900000-admission-whole-burst';

export const entities = [
  Partner,
  Credential,
  RequestNonce,
  RateLimitBucket,
  AdmissionEpoch,
  AdmissionStore,
  Domain,
  Quote,
  Order,
  OrderTimelineEntry,
  IdempotencyKey,
  Refund,
  PartnerEvent,
  EventCounter,
  SaleTransaction,
  LedgerEntry,
  SandboxTransfer,
  SandboxCharge,
  SandboxRefund,
  PartnerQuota,
  WebhookEndpoint,
  WebhookDelivery,
  LedgerPosting,
  Settlement,
  Payout,
  PayoutLine,
  CheckoutSession,
  CheckoutPayment,
  CardAttemptCheck,
  ProcessorEvent,
  CardDispute,
  Email,
  PartnerApplication,
  WorkerRelease,
  BrokerageCase,
  BrokerageTimelineEntry,
  ReferralLink,
  ReferralClick,
  OperatorAction,
  ReferralCheckout,
  ReferralSale,
];
export const migrations = [
  Foundation1795000000000,
  Orders1795000100000,
  Webhooks1795000200000,
  Search1795000300000,
  OrderIntegrity1795000400000,
  Hardening1795000500000,
  Ledger1795000600000,
  Checkout1795000700000,
  Brokerage1795000800000,
  Referral1795000900000,
  ReferralRecovery1795000950000,
  HotPath1795001000000,
  AdmissionBatches1795001100000,
  AdmissionLockOrder1795001200000,
  AdmissionInline1795001300000,
  ChangeFeed1795001400000,
  AdmissionStore1795001500000,
  ListingNotifySize1795001600000,
  IdempotentReplayBytes1795001700000,
  CheckoutDeclines1795001800000,
  DeliveryIdle1795001900000,
  SettlementCurrency1795002000000,
  CardPayments1795002100000,
  PartnerQuotas1795002200000,
  BoundedClicksStoreId1795002300000,
  OperatorActions1795002400000,
  EventRequestId1795002500000,
  WebhookSecretRotation1795002600000,
  AdmissionRateLimitState1795002700000,
  PaidSignal1795002800000,
  CardAttemptChecks1795002900000,
  LegacyCardPayments1795003000000,
  ProcessorEvents1795003100000,
  CardDisputes1795003200000,
  OnboardingEmail1795003300000,
  LateDeliveryOrder1795003400000,
  WorkerReleases1795003500000,
  LeastPrivilege1795003600000,
  AuditTrail1795003700000,
  UiGateRole1795003800000,
  AdmissionWholeBurst1795003900000,
];

/** A data source over `url`; schema changes only through migrations, never synchronize. */
export function createDataSource(url: string, options: { poolSize?: number } = {}): DataSource {
  return new DataSource({
    type: 'postgres',
    url,
    entities,
    migrations,
    migrationsRun: false,
    synchronize: false,
    // Each where() and andWhere() in its own brackets: an OR in one never spills into the next.
    isolateWhereStatements: true,
    logging: ['error'],
    // Word-similarity matches (typo tolerance in search) start at 0.45 rather than pg_trgm's 0.6.
    // A connection is waited for at most 10 s (pool full, or Postgres not answering), never forever.
    extra: { max: options.poolSize ?? 10, connectionTimeoutMillis: 10_000, options: '-c pg_trgm.word_similarity_threshold=0.45' },
  });
}

/** Connects and applies pending migrations; returns the names applied now. */
export async function openDatabase(url: string, options: { poolSize?: number } = {}): Promise<DataSource> {
  const dataSource = createDataSource(url, options);
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  return dataSource;
}
