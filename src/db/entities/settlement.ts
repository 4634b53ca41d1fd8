import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';
import { centsColumn } from '../columns';

/**
 * A partner's calendar month (UTC). While open its figures are sums over the period's ledger
 * entries; closing takes a snapshot of those sums, which never changes afterwards (reconcile
 * checks it against the entries).
 */
@Entity({ name: 'settlements' })
export class Settlement {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'public_id', type: 'text', unique: true })
  publicId: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ name: 'period_start', type: 'date' })
  periodStart: string;

  @Column({ name: 'period_end', type: 'date' })
  periodEnd: string;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ type: 'text' })
  status: 'open' | 'closed';

  @Column({ name: 'gross_sold_cents', ...centsColumn, nullable: true })
  grossSoldCents: number | null;

  @Column({ name: 'commission_retained_cents', ...centsColumn, nullable: true })
  commissionRetainedCents: number | null;

  @Column({ name: 'amount_owed_to_service_cents', ...centsColumn, nullable: true })
  amountOwedToServiceCents: number | null;

  @Column({ name: 'closed_at', type: 'timestamptz', nullable: true })
  closedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
