/**
 * `admin webhooks list|deliveries` (CONTRACT §12): a partner's endpoint and how far delivery has
 * got, and its recent deliveries (event, attempts, last error), for an operator answering "did my
 * webhook arrive?".
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { PartnerEvent } from '../db/entities/partner-event';
import { WebhookDelivery } from '../db/entities/webhook-delivery';
import { WebhookEndpoint } from '../db/entities/webhook-endpoint';
import { findPartnerByName } from '../partners/partners';

async function partnerId(dataSource: DataSource, name: string): Promise<string> {
  const partner = await findPartnerByName(dataSource, name);
  if (!partner) throw new Error(`no partner named ${name}`);
  return partner.id;
}

export interface EndpointState {
  partner: string;
  environment: Environment;
  url: string | null;
  enabled: boolean;
  /** The partner_seq of the last event delivered or given up on, and of the last event written. */
  delivered_through_seq: number;
  last_event_seq: number;
  deliveries: { pending: number; delivered: number; failed: number };
  updated_at: string | null;
}

export async function endpointState(dataSource: DataSource, name: string, environment: Environment): Promise<EndpointState> {
  const id = await partnerId(dataSource, name);
  const endpoint = await dataSource.getRepository(WebhookEndpoint).findOneBy({ partnerId: id, environment });
  const last = await dataSource.getRepository(PartnerEvent).createQueryBuilder('e').select('max(e.partner_seq)', 'seq').where('e.partner_id = :id AND e.environment = :environment', { id, environment }).getRawOne<{ seq: string | null }>();
  const byStatus = await dataSource
    .getRepository(WebhookDelivery)
    .createQueryBuilder('d')
    .select('d.status', 'status')
    .addSelect('count(*)', 'n')
    .where('d.partner_id = :id AND d.environment = :environment', { id, environment })
    .groupBy('d.status')
    .getRawMany<{ status: 'pending' | 'delivered' | 'failed'; n: string }>();
  const count = (status: string) => Number(byStatus.find((r) => r.status === status)?.n ?? 0);
  return {
    partner: name,
    environment,
    url: endpoint?.url ?? null,
    enabled: endpoint?.enabled ?? false,
    delivered_through_seq: Number(endpoint?.deliveredThroughSeq ?? 0),
    last_event_seq: Number(last?.seq ?? 0),
    deliveries: { pending: count('pending'), delivered: count('delivered'), failed: count('failed') },
    updated_at: endpoint?.updatedAt.toISOString() ?? null,
  };
}

export interface DeliveryView {
  event_id: string;
  event_type: string | null;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_error: string | null;
  last_attempt_at: string | null;
  finished_at: string | null;
}

/** The partner's most recent deliveries, newest first (`status` to see only failed or pending ones). */
export async function recentDeliveries(dataSource: DataSource, name: string, environment: Environment, options: { limit: number; status?: DeliveryView['status'] }): Promise<DeliveryView[]> {
  const id = await partnerId(dataSource, name);
  const q = dataSource
    .getRepository(WebhookDelivery)
    .createQueryBuilder('d')
    .leftJoin(PartnerEvent, 'e', 'e.id = d.event_id')
    .select(['d.event_id AS event_id', 'e.type AS event_type', 'd.status AS status', 'd.attempts AS attempts', 'd.last_error AS last_error', 'd.last_attempt_at AS last_attempt_at', 'd.finished_at AS finished_at'])
    .where('d.partner_id = :id AND d.environment = :environment', { id, environment })
    .orderBy('e.partner_seq', 'DESC', 'NULLS LAST')
    .limit(options.limit);
  if (options.status) q.andWhere('d.status = :status', { status: options.status });
  const rows = await q.getRawMany<{ event_id: string; event_type: string | null; status: DeliveryView['status']; attempts: number; last_error: string | null; last_attempt_at: Date | null; finished_at: Date | null }>();
  return rows.map((r) => ({ ...r, attempts: Number(r.attempts), last_attempt_at: r.last_attempt_at?.toISOString() ?? null, finished_at: r.finished_at?.toISOString() ?? null }));
}
