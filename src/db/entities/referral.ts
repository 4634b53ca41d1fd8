import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';
import { centsColumn } from '../columns';

export type LinkKind = 'generic' | 'domain' | 'product';

/** A partner's tracking link; its public URL is /r/<code>. */
@Entity({ name: 'referral_links' })
export class ReferralLink {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'public_id', type: 'text', unique: true })
  publicId: string;

  @Column({ type: 'text', unique: true })
  code: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ type: 'text' })
  kind: LinkKind;

  @Column({ type: 'text', nullable: true })
  domain: string | null;

  @Column({ type: 'text', nullable: true })
  product: string | null;

  @Column({ type: 'text', nullable: true })
  campaign: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;
}

/**
 * Counted clicks (a person, not a bot, a HEAD or a prefetch, opened the link) of one visitor on one
 * link in one UTC day: one row, upserted, so a flood of `/r/` grows no table beyond a row per
 * visitor and day (CONTRACT §15). `unique_clicks` counts rows; `clicks` sums their counts.
 */
@Entity({ name: 'referral_clicks' })
export class ReferralClick {
  @PrimaryColumn({ name: 'link_id', type: 'uuid' })
  linkId: string;

  /** HMAC of the visitor (its attribution cookie's visitor id). */
  @PrimaryColumn({ name: 'visitor_hash', type: 'text' })
  visitorHash: string;

  /** The clicks' UTC day, `YYYY-MM-DD`. */
  @PrimaryColumn({ type: 'date' })
  day: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ type: 'integer' })
  clicks: number;

  /** A time window counts the row's clicks when this, the day's first click, lies in it. */
  @Column({ name: 'first_clicked_at', type: 'timestamptz' })
  firstClickedAt: Date;

  @Column({ name: 'last_clicked_at', type: 'timestamptz' })
  lastClickedAt: Date;
}

/** A hosted checkout shown to a browser a link referred (the funnel's middle step). */
@Entity({ name: 'referral_checkouts' })
export class ReferralCheckout {
  @PrimaryColumn({ name: 'session_id', type: 'uuid' })
  sessionId: string;

  @Column({ name: 'link_id', type: 'uuid' })
  linkId: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ name: 'started_at', type: 'timestamptz', default: () => 'now()' })
  startedAt: Date;
}

/** A hosted checkout paid within the attribution window of a link's click. */
@Entity({ name: 'referral_sales' })
export class ReferralSale {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'public_id', type: 'text', unique: true })
  publicId: string;

  @Column({ name: 'link_id', type: 'uuid' })
  linkId: string;

  /** The referring partner (the link's), who earns the commission. */
  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ name: 'order_id', type: 'uuid', unique: true })
  orderId: string;

  @Column({ name: 'buyer_email', type: 'text' })
  buyerEmail: string;

  @Column({ type: 'text' })
  domain: string;

  @Column({ name: 'amount_cents', ...centsColumn })
  amountCents: number;

  @Column({ name: 'commission_bps', type: 'integer' })
  commissionBps: number;

  @Column({ name: 'commission_cents', ...centsColumn })
  commissionCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ name: 'occurred_at', type: 'timestamptz' })
  occurredAt: Date;

  /** Its `referral:<sale_id>` workflow (the 30-day window) was started; the recovery sweep starts any that was not. */
  @Column({ name: 'workflow_started', type: 'boolean', default: false })
  workflowStarted: boolean;
}
