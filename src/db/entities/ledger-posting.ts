import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';
import type { TransactionPaymentModel } from './sale-transaction';

export type PostingKind = 'sale' | 'reversal' | 'payout' | 'referral_pending' | 'referral_accrued' | 'referral_reversed' | 'card_payment' | 'card_refund' | 'commission_payable' | 'dispute_opened' | 'dispute_won' | 'dispute_lost';

/**
 * One business event in the ledger, booked once (unique idempotency key), with entries that sum
 * to zero, in the settlement period it was booked into.
 */
@Entity({ name: 'ledger_postings' })
export class LedgerPosting {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'idempotency_key', type: 'text', unique: true })
  idempotencyKey: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ type: 'text' })
  kind: PostingKind;

  @Column({ name: 'payment_model', type: 'text', nullable: true })
  paymentModel: TransactionPaymentModel | null;

  @Column({ name: 'transaction_id', type: 'uuid', nullable: true })
  transactionId: string | null;

  /** The referred sale a referral commission line belongs to. */
  @Column({ name: 'referral_sale_id', type: 'uuid', nullable: true })
  referralSaleId: string | null;

  @Column({ name: 'payout_id', type: 'uuid', nullable: true })
  payoutId: string | null;

  /** First day of the calendar month (UTC) the posting belongs to, as `YYYY-MM-DD`. */
  @Column({ name: 'period_start', type: 'date' })
  periodStart: string;

  @Column({ name: 'occurred_at', type: 'timestamptz' })
  occurredAt: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
