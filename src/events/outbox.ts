/**
 * The event history (CONTRACT §7), written in the same database transaction as the state change
 * it reports, so an event is never lost; `dedupe_key` makes a retried write a no-op, so it is
 * never recorded twice.
 */
import type { EntityManager } from 'typeorm';
import type { Environment } from '../config';
import { EventCounter, PartnerEvent } from '../db/entities/partner-event';
import { publicId } from '../ids';
import { currentRequestId } from '../api/request-store';

export type EventType =
  | 'order.created'
  | 'order.refunded'
  | 'order.dispute_opened'
  | 'order.dispute_closed'
  | 'transfer.domain_locked'
  | 'transfer.initiated'
  | 'transfer.pending'
  | 'transfer.completed'
  | 'transfer.failed'
  | BrokerageEventType;

/** One event per brokerage case status (docs/partners/brokerage.md); `requested` is the case being opened. */
export const BROKERAGE_EVENT = {
  requested: 'brokerage.case_opened',
  researching: 'brokerage.researching',
  owner_contacted: 'brokerage.owner_contacted',
  negotiating: 'brokerage.negotiating',
  agreed: 'brokerage.agreed',
  payment_secured: 'brokerage.payment_secured',
  transferring: 'brokerage.transferring',
  completed: 'brokerage.case_completed',
  closed: 'brokerage.case_closed',
} as const;
export type BrokerageEventType = (typeof BROKERAGE_EVENT)[keyof typeof BROKERAGE_EVENT];

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
  const partnerSeq = await nextPartnerSeq(manager, event.partnerId, event.environment);
  const inserted = await manager
    .createQueryBuilder()
    .insert()
    .into(PartnerEvent)
    .values({
      id: publicId('evt'),
      partnerId: event.partnerId,
      environment: event.environment,
      type: event.type,
      data: event.data as object,
      requestId: currentRequestId() ?? null,
      dedupeKey: event.dedupeKey,
      partnerSeq,
      createdAt: () => 'clock_timestamp()',
    })
    .orIgnore()
    .returning(['seq'])
    .execute();
  return (inserted.raw as unknown[]).length === 1;
}

/** Takes the partner's next sequence number; the counter row stays locked until commit. */
async function nextPartnerSeq(manager: EntityManager, partnerId: string, environment: Environment): Promise<string> {
  const bump = () =>
    manager
      .createQueryBuilder()
      .update(EventCounter)
      .set({ lastSeq: () => 'last_seq + 1' })
      .where('partner_id = :partnerId AND environment = :environment', { partnerId, environment })
      .returning('last_seq')
      .execute();
  let bumped = await bump();
  if ((bumped.raw as unknown[]).length === 0) {
    await manager.createQueryBuilder().insert().into(EventCounter).values({ partnerId, environment, lastSeq: '0' }).orIgnore().execute();
    bumped = await bump();
  }
  return (bumped.raw as Array<{ last_seq: string }>)[0].last_seq;
}
