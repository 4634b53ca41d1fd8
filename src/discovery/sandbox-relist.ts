/**
 * Sandbox inventory never runs out (CONTRACT §15): a sandbox name sold is listed again once its
 * transfer completed before `completedBefore` (24 hours earlier on the relisting workflow's
 * clock). The old order keeps its history; the name is simply on the market again (the change
 * feed tells search and the API caches), and a new order for it holds it afresh.
 */
import type { DataSource } from 'typeorm';
import { Domain } from '../db/entities/domain';
import { OrderTimelineEntry } from '../db/entities/order-timeline-entry';

export async function relistSandboxNames(dataSource: DataSource, completedBefore: Date): Promise<number> {
  const completed = dataSource.getRepository(OrderTimelineEntry).createQueryBuilder('t').select('t.order_id').where("t.status = 'TRANSFER_COMPLETED' AND t.at < :completedBefore");
  const result = await dataSource
    .getRepository(Domain)
    .createQueryBuilder()
    .update()
    .set({ status: 'listed', heldByOrderId: null })
    .where("environment = 'sandbox' AND status = 'sold'")
    .andWhere(`held_by_order_id IN (${completed.getQuery()})`, { completedBefore })
    .execute();
  return result.affected ?? 0;
}
