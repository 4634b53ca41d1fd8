/** The replayable event history (CONTRACT §7): each partner's events in partner_seq order. */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { PartnerEvent } from '../db/entities/partner-event';

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
  const rows = await dataSource
    .getRepository(PartnerEvent)
    .createQueryBuilder('e')
    .where('e.partner_id = :partnerId AND e.environment = :environment AND e.partner_seq > :afterSeq', { partnerId, environment, afterSeq })
    .orderBy('e.partner_seq', 'ASC')
    .limit(limit)
    .getMany();
  return rows.map(storedEvent);
}

export function storedEvent(row: PartnerEvent): StoredEvent {
  return { id: row.id, type: row.type, created_at: row.createdAt.toISOString(), data: row.data, seq: Number(row.partnerSeq) };
}

/** The body a webhook delivery carries and /events lists: exactly the event, nothing else. */
export function eventView(event: StoredEvent): EventView {
  return { id: event.id, type: event.type, created_at: event.created_at, data: event.data };
}
