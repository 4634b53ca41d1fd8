import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { centsColumn } from '../columns';

export type SandboxChargeStatus = 'approved' | 'declined' | 'voided';

/**
 * The sandbox card processor's own record of each authorisation it was asked for, by the
 * caller's idempotency key (a real processor keeps the same), and what it gave back since.
 */
@Entity({ name: 'sandbox_card_charges' })
export class SandboxCharge {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'idempotency_key', type: 'text', unique: true })
  idempotencyKey: string;

  @Column({ name: 'payment_ref', type: 'text', unique: true })
  paymentRef: string;

  @Column({ type: 'text' })
  status: SandboxChargeStatus;

  @Column({ name: 'decline_reason', type: 'text', nullable: true })
  declineReason: string | null;

  @Column({ name: 'amount_cents', ...centsColumn })
  amountCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ name: 'card_last4', type: 'char', length: 4 })
  cardLast4: string;

  /** Refunded so far (never more than the amount). */
  @Column({ name: 'refunded_cents', ...centsColumn, default: 0 })
  refundedCents: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

/** One refund the sandbox processor made, once per idempotency key. */
@Entity({ name: 'sandbox_card_refunds' })
export class SandboxRefund {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'idempotency_key', type: 'text', unique: true })
  idempotencyKey: string;

  @Column({ name: 'charge_id', type: 'uuid' })
  chargeId: string;

  @Column({ name: 'amount_cents', ...centsColumn })
  amountCents: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
