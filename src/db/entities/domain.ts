import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import type { Environment } from '../../config';
import { centsColumn } from '../columns';

/**
 * A name in an environment's inventory. `listed` names are for sale; `unlisted` ones are known
 * but not for sale (answered as unlisted); `reserved` and `sold` are set by quotes and orders.
 */
export type DomainStatus = 'listed' | 'unlisted' | 'reserved' | 'sold';

@Entity({ name: 'domains' })
@Index(['environment', 'name'], { unique: true })
export class Domain {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  environment: Environment;

  /** Lower-case full name, e.g. `coffeebar.com`. */
  @Column({ type: 'text' })
  name: string;

  /** The name without its TLD, e.g. `coffeebar`: what search matches against. */
  @Column({ type: 'text' })
  label: string;

  @Column({ type: 'text' })
  tld: string;

  @Column({ type: 'text' })
  category: string;

  @Column({ name: 'buy_now_price_cents', ...centsColumn })
  buyNowPriceCents: number;

  @Column({ name: 'floor_price_cents', ...centsColumn })
  floorPriceCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ type: 'text' })
  status: DomainStatus;

  /** The quote whose reservation holds the name while it is `reserved`. */
  @Column({ name: 'reserved_by_quote_id', type: 'uuid', nullable: true })
  reservedByQuoteId: string | null;

  /** The order that holds the name while it is `sold`; only it may put the name back on the market. */
  @Column({ name: 'held_by_order_id', type: 'uuid', nullable: true })
  heldByOrderId: string | null;

  @Column({ name: 'active_site', type: 'boolean', default: false })
  activeSite: boolean;

  @Column({ name: 'registered_year', type: 'integer', nullable: true })
  registeredYear: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
