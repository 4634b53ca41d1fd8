/** The replayable event history (CONTRACT §7): each partner's events in partner_seq order. */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';

export interface EventView {
  id: string;
  type: string;
  created_at: string;
  data: unknown;
}

export interface StoredEvent extends EventView {
  seq: number;
}

/** Events after `afterSeq`, oldest first. */
export async function eventsAfter(dataSource: DataSource, partnerId: string, environment: Environment, afterSeq: number, limit: number): Promise<StoredEvent[]> {
  const rows = (await dataSource.query(
    `SELECT id, type, created_at, data, partner_seq FROM events
     WHERE partner_id = $1 AND environment = $2 AND partner_seq > $3 ORDER BY partner_seq LIMIT $4`,
    [partnerId, environment, afterSeq, limit],
  )) as Array<{ id: string; type: string; created_at: Date; data: unknown; partner_seq: string }>;
  return rows.map((r) => ({ id: r.id, type: r.type, created_at: r.created_at.toISOString(), data: r.data, seq: Number(r.partner_seq) }));
}

/** The body a webhook delivery carries and /events lists: exactly the event, nothing else. */
export function eventView(event: StoredEvent): EventView {
  return { id: event.id, type: event.type, created_at: event.created_at, data: event.data };
}
