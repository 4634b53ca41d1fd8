import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';
import { centsColumn } from '../columns';

export type TransactionPaymentModel = 'partner_collected' | 'service_collected' | 'brokerage';

/** One sale through a partner (CONTRACT §8), booked when its transfer completed or its brokered deal did. */
@Entity({ name: 'transactions' })
export class SaleTransaction {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'public_id', type: 'text', unique: true })
  publicId: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  /** The order whose sale this is; null for a brokered deal. */
  @Column({ name: 'order_id', type: 'uuid', unique: true, nullable: true })
  orderId: string | null;

  /** The brokerage case whose deal this is; null for an order's sale (exactly one of the two is set). */
  @Column({ name: 'brokerage_case_id', type: 'uuid', unique: true, nullable: true })
  brokerageCaseId: string | null;

  @Column({ type: 'text' })
  domain: string;

  @Column({ name: 'payment_model', type: 'text' })
  paymentModel: TransactionPaymentModel;

  @Column({ name: 'gross_cents', ...centsColumn })
  grossCents: number;

  @Column({ name: 'commission_cents', ...centsColumn })
  commissionCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ name: 'occurred_at', type: 'timestamptz' })
  occurredAt: Date;

  /** `reversed` once a reversal posting undid the sale (a refund after booking, a chargeback). */
  @Column({ type: 'text', default: 'completed' })
  status: 'completed' | 'reversed';

  @Column({ name: 'reversed_at', type: 'timestamptz', nullable: true })
  reversedAt: Date | null;
}
