import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { OrderStatus } from '../../../workflows/messages';

/** One status an order reached, at the time its workflow recorded it. */
@Entity({ name: 'order_timeline' })
export class OrderTimelineEntry {
  @PrimaryColumn({ name: 'order_id', type: 'uuid' })
  orderId: string;

  @PrimaryColumn({ type: 'text' })
  status: OrderStatus;

  @Column({ type: 'timestamptz' })
  at: Date;

  @Column({ type: 'text', nullable: true })
  detail: string | null;
}
