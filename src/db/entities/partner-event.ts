import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Environment } from '../../config';

/** One event of a partner's replayable history (CONTRACT §7), numbered per partner in commit order. */
@Entity({ name: 'events' })
export class PartnerEvent {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  seq: string;

  @Column({ type: 'text', unique: true })
  id: string;

  @Column({ name: 'partner_id', type: 'uuid' })
  partnerId: string;

  @Column({ type: 'text' })
  environment: Environment;

  @Column({ type: 'text' })
  type: string;

  @Column({ type: 'jsonb' })
  data: unknown;

  @Column({ name: 'dedupe_key', type: 'text', unique: true })
  dedupeKey: string;

  @Column({ name: 'partner_seq', type: 'bigint' })
  partnerSeq: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** The partner's request that wrote it (`req_…`), when a request did (not one written by a workflow's step). Operators only: never sent. */
  @Column({ name: 'request_id', type: 'text', nullable: true })
  requestId: string | null;
}

/** The last `partner_seq` handed out per partner and environment; its row lock orders appends. */
@Entity({ name: 'event_counters' })
export class EventCounter {
  @Column({ name: 'partner_id', type: 'uuid', primary: true })
  partnerId: string;

  @Column({ type: 'text', primary: true })
  environment: Environment;

  @Column({ name: 'last_seq', type: 'bigint' })
  lastSeq: string;
}
