import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { centsColumn } from '../columns';

/** The one refund an order can have; written only once the fulfilment workflow granted it. */
@Entity({ name: 'refunds' })
export class Refund {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'public_id', type: 'text', unique: true })
  publicId: string;

  @Column({ name: 'order_id', type: 'uuid', unique: true })
  orderId: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ name: 'amount_cents', ...centsColumn })
  amountCents: number;

  @Column({ type: 'char', length: 3 })
  currency: string;

  @Column({ type: 'text', nullable: true })
  reason: string | null;

  @Column({ type: 'text' })
  status: 'succeeded';

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
