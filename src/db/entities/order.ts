import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';
import type { OrderStatus } from '../../../workflows/messages';
import { centsColumn } from '../columns';

export type PaymentModel = 'partner_collected' | 'service_collected';

/** A sale of one listed name, and the read model of its fulfilment workflow (`order:<public_id>`). */
@Entity({ name: 'orders' })
export class Order {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'public_id', type: 'text', unique: true })
  publicId: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ name: 'quote_id', type: 'uuid', nullable: true })
  quoteId: string | null;

  @Column({ name: 'domain_id', type: 'uuid' })
  domainId: string;

  @Column({ type: 'text' })
  domain: string;

  @Column({ name: 'sale_price_cents', ...centsColumn })
  salePriceCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ name: 'external_payment_ref', type: 'text' })
  externalPaymentRef: string;

  @Column({ name: 'payment_model', type: 'text' })
  paymentModel: PaymentModel;

  /** The partner's commission rate for this sale, fixed when the order is recorded (CONTRACT §8). */
  @Column({ name: 'commission_bps', type: 'integer' })
  commissionBps: number;

  @Column({ type: 'text' })
  status: OrderStatus;

  @Column({ name: 'failure_reason', type: 'text', nullable: true })
  failureReason: string | null;

  /** The hosted checkout this sale was paid on (service-collected sales). */
  @Column({ name: 'checkout_session_id', type: 'uuid', nullable: true })
  checkoutSessionId: string | null;

  /** The partner's own reference, from its checkout session. */
  @Column({ name: 'client_reference_id', type: 'text', nullable: true })
  clientReferenceId: string | null;

  @Column({ name: 'workflow_started', type: 'boolean', default: false })
  workflowStarted: boolean;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
