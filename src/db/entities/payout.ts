import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';

/** Money the service paid a partner. Its amount and breakdown are sums over its lines' entries. */
@Entity({ name: 'payouts' })
export class Payout {
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
  status: 'paid';

  @Column({ name: 'paid_at', type: 'timestamptz' })
  paidAt: Date;
}

/** A posting a payout paid: what it owed the partner is part of the payout, once. */
@Entity({ name: 'payout_lines' })
export class PayoutLine {
  @PrimaryColumn({ name: 'payout_id', type: 'uuid' })
  payoutId: string;

  @PrimaryColumn({ name: 'posting_id', type: 'bigint' })
  postingId: string;
}
