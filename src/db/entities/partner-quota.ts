import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { Environment } from '../../config';

/** An operator's quota for one partner and environment (`admin partner quota`); null keeps the default. */
@Entity({ name: 'partner_quotas' })
export class PartnerQuota {
  @PrimaryColumn({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @PrimaryColumn({ type: 'text' })
  environment: Environment;

  @Column({ name: 'active_quotes', type: 'integer', nullable: true })
  activeQuotes: number | null;

  @Column({ name: 'open_cases', type: 'integer', nullable: true })
  openCases: number | null;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
