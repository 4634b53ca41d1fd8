/**
 * The event history (CONTRACT §7), written in the same database transaction as the state change
 * it reports, so an event is never lost; `dedupe_key` makes a retried write a no-op, so it is
 * never recorded twice.
 */
import type { EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { publicId } from '../ids';

export type EventType =
  | 'order.created'
  | 'order.refunded'
  | 'transfer.domain_locked'
  | 'transfer.initiated'
  | 'transfer.pending'
  | 'transfer.completed'
  | 'transfer.failed';

export interface NewEvent {
  partnerId: string;
  environment: Environment;
  type: EventType;
  data: unknown;
  /** Unique per real-world change, e.g. `order:<id>:TRANSFER_COMPLETED`. */
  dedupeKey: string;
}

/**
 * Appends the event unless one with the same dedupe key exists; returns whether it was new.
 * Call it last in a transaction: it takes the partner's event counter lock until commit, which
 * keeps each partner's `partner_seq` in commit order (see the webhooks migration).
 */
export async function appendEvent(manager: EntityManager, event: NewEvent): Promise<boolean> {
  const [{ last_seq: seq }] = (await manager.query(
    `INSERT INTO event_counters (partner_id, environment, last_seq) VALUES ($1, $2, 1)
     ON CONFLICT (partner_id, environment) DO UPDATE SET last_seq = event_counters.last_seq + 1
     RETURNING last_seq`,
    [event.partnerId, event.environment],
  )) as Array<{ last_seq: string }>;
  const rows = (await manager.query(
    `INSERT INTO events (id, partner_id, environment, type, data, dedupe_key, partner_seq, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp()) ON CONFLICT (dedupe_key) DO NOTHING RETURNING seq`,
    [publicId('evt'), event.partnerId, event.environment, event.type, JSON.stringify(event.data), event.dedupeKey, seq],
  )) as unknown[];
  return rows.length === 1;
}
