import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';
import { centsColumn } from '../columns';

export type QuoteStatus = 'active' | 'consumed' | 'expired';

/** A firm price and a 10-minute reservation of one name for one partner. */
@Entity({ name: 'quotes' })
export class Quote {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'public_id', type: 'text', unique: true })
  publicId: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ name: 'domain_id', type: 'uuid' })
  domainId: string;

  @Column({ type: 'text' })
  domain: string;

  @Column({ name: 'price_cents', ...centsColumn })
  priceCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ type: 'text' })
  status: QuoteStatus;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** Set by the API at creation; the quote's workflow timer, not this column, ends the reservation. */
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'closed_at', type: 'timestamptz', nullable: true })
  closedAt: Date | null;
}
