import { Column, CreateDateColumn, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';
import type { Scope } from '../../auth/scopes';
import { Partner } from './partner';

@Entity({ name: 'credentials' })
export class Credential {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  /** Public key id, `pk_test_…` (sandbox) or `pk_live_…` (live). */
  @Column({ name: 'key_id', type: 'text', unique: true })
  keyId: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @ManyToOne(() => Partner, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'partner_id' })
  partner?: Partner;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ type: 'text', array: true })
  scopes: Scope[];

  /** AES-256-GCM sealed secret (see SecretBox); never stored or logged in clear. */
  @Column({ name: 'secret_sealed', type: 'bytea' })
  secretSealed: Buffer;

  /** Operator override of the sustained rate; null means the environment's configured default. */
  @Column({ name: 'rate_limit_per_second', type: 'double precision', nullable: true })
  rateLimitPerSecond: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;
}
