import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Environment } from '../../config';

/** A partner's webhook endpoint in one environment, and how far delivery has got. */
@Entity({ name: 'webhook_endpoints' })
export class WebhookEndpoint {
  @PrimaryColumn({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @PrimaryColumn({ type: 'text' })
  environment: Environment;

  @Column({ type: 'text' })
  url: string;

  /** AES-256-GCM sealed signing secret. */
  @Column({ name: 'secret_sealed', type: 'bytea' })
  secretSealed: Buffer;

  /** The secret a new one replaced, sealed the same way: it signs too until previousSecretUntil (24 hours). */
  @Column({ name: 'previous_secret_sealed', type: 'bytea', nullable: true })
  previousSecretSealed: Buffer | null;

  @Column({ name: 'previous_secret_until', type: 'timestamptz', nullable: true })
  previousSecretUntil: Date | null;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** The partner_seq of the last event delivered or given up on. */
  @Column({ name: 'delivered_through_seq', type: 'bigint', default: 0 })
  deliveredThroughSeq: string;

  /**
   * The delivery workflow found nothing left to push and waits for a wake-up signal; false while
   * it pushes. Wake-ups signal only a waiting delivery (src/webhooks/notify.ts).
   */
  @Column({ name: 'delivery_idle', type: 'boolean', default: true })
  deliveryIdle: boolean;

  /** When the recovery sweep last woke its delivery (it wakes the least recently woken first). */
  @Column({ name: 'woken_at', type: 'timestamptz', nullable: true })
  wokenAt: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
