import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';
import type { CaseStatus, CaseTier } from '../../../workflows/brokerage-messages';
import { centsColumn } from '../columns';

/** A brokerage case (CONTRACT §10): the read model its workflow (`brokerage:<public_id>`) writes. */
@Entity({ name: 'brokerage_cases' })
export class BrokerageCase {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'public_id', type: 'text', unique: true })
  publicId: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ type: 'text' })
  domain: string;

  @Column({ type: 'text' })
  tier: CaseTier;

  @Column({ type: 'text' })
  status: CaseStatus;

  @Column({ name: 'buyer_email', type: 'text' })
  buyerEmail: string;

  @Column({ name: 'budget_cents', ...centsColumn })
  budgetCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  /** The tier's fee on the deal price, fixed when the case was opened. */
  @Column({ name: 'fee_bps', type: 'integer' })
  feeBps: number;

  /** The partner's brokerage rate when the case was opened; a later change does not alter it. */
  @Column({ name: 'partner_share_bps', type: 'integer' })
  partnerShareBps: number;

  /** The agreed price, from `agreed` on (cleared if the deal falls back to negotiating). */
  @Column({ name: 'price_cents', ...centsColumn, nullable: true })
  priceCents: number | null;

  @Column({ name: 'fee_cents', ...centsColumn, nullable: true })
  feeCents: number | null;

  @Column({ name: 'partner_share_cents', ...centsColumn, nullable: true })
  partnerShareCents: number | null;

  /** How many statuses the case has had (its timeline's length): a retried move is applied once. */
  @Column({ type: 'integer' })
  moves: number;

  @Column({ name: 'follow_ups_sent', type: 'integer' })
  followUpsSent: number;

  /** Bumped when an operator revokes the progress link: older links stop working. */
  @Column({ name: 'link_version', type: 'integer' })
  linkVersion: number;

  @Column({ name: 'close_reason', type: 'text', nullable: true })
  closeReason: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'closed_at', type: 'timestamptz', nullable: true })
  closedAt: Date | null;
}

/** One status a case reached (statuses may repeat: agreed → negotiating → agreed), at its workflow's time. */
@Entity({ name: 'brokerage_timeline' })
export class BrokerageTimelineEntry {
  @PrimaryColumn({ name: 'case_id', type: 'uuid' })
  caseId: string;

  @PrimaryColumn({ type: 'integer' })
  seq: number;

  @Column({ type: 'text' })
  status: CaseStatus;

  @Column({ type: 'timestamptz' })
  at: Date;

  @Column({ type: 'text', nullable: true })
  detail: string | null;
}
