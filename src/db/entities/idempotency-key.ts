import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import type { Environment } from '../../config';

/** A claimed Idempotency-Key and the answer first given for it. */
@Entity({ name: 'idempotency_keys' })
export class IdempotencyKey {
  @PrimaryColumn({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @PrimaryColumn({ type: 'text' })
  environment: Environment;

  @PrimaryColumn({ type: 'uuid' })
  key: string;

  @Column({ type: 'text' })
  operation: string;

  @Column({ name: 'request_hash', type: 'text' })
  requestHash: string;

  @Column({ name: 'response_status', type: 'integer', nullable: true })
  responseStatus: number | null;

  /** `json`, not `jsonb`: a replay answers the same bytes (jsonb would reorder the keys). */
  @Column({ name: 'response_body', type: 'json', nullable: true })
  responseBody: unknown;

  @Column({ name: 'order_id', type: 'uuid', nullable: true })
  orderId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
