/** The maintenance loops' I/O: pruning nonces and the recovery sweep's three steps. */
import { log } from '@temporalio/activity';
import { LessThan } from 'typeorm';
import { Order } from '../src/db/entities/order';
import { RequestNonce } from '../src/db/entities/admission';
import { ReferralSale } from '../src/db/entities/referral';
import { markWorkflowStarted } from '../src/orders/orders';
import { startOrderFulfilment } from '../src/orders/start-workflows';
import { startReferralCommission } from '../src/checkout/sessions';
import { lateDeliveries, wakeDelivery } from '../src/webhooks/notify';
import type { ActivityDeps } from './deps';
import { heartbeatOrStop } from './heartbeat';

export function createMaintenanceActivities(deps: ActivityDeps) {
  return {
    /** Deletes request nonces first seen before `seenBefore`; returns how many. */
    async pruneNonces(input: { seenBefore: string }): Promise<number> {
      const pruned = await deps.dataSource.getRepository(RequestNonce).delete({ seenAt: LessThan(new Date(input.seenBefore)) });
      return pruned.affected ?? 0;
    },

    /**
     * Wakes the delivery of every endpoint that is behind its events; returns how many were woken.
     * One partner's failure (a refused start or signal) is logged and skipped: it never stops the
     * others, and the next round tries that partner again.
     */
    async wakeLateDeliveries(): Promise<number> {
      if (!deps.workflows) return 0;
      let woken = 0;
      for (const late of await lateDeliveries(deps.dataSource)) {
        heartbeatOrStop();
        try {
          await wakeDelivery(deps.workflows, late.partnerId, late.environment, late.idle);
          woken++;
        } catch (err) {
          log.warn('recovery sweep: could not wake a delivery', { partner_id: late.partnerId, environment: late.environment, error: (err as Error).message });
        }
      }
      return woken;
    },

    /** Starts the 30-day window of referred sales whose workflow was never started; returns how many. */
    async startUnstartedReferralWindows(input: { olderThanSeconds: number }): Promise<number> {
      if (!deps.workflows) return 0;
      const sales = await deps.dataSource.getRepository(ReferralSale).find({
        where: { workflowStarted: false, occurredAt: LessThan(new Date(Date.now() - input.olderThanSeconds * 1000)) },
        order: { occurredAt: 'ASC' },
        take: 100,
      });
      for (const sale of sales) {
        heartbeatOrStop();
        try {
          await startReferralCommission(deps.workflows, deps.dataSource, sale.publicId, sale.partnerId, sale.domain, sale.environment);
        } catch (err) {
          log.warn('recovery sweep: could not start a referral window', { sale_id: sale.publicId, error: (err as Error).message });
        }
      }
      return sales.length;
    },

    /** Starts fulfilment for orders whose workflow was never started; returns how many. */
    async startUnstartedFulfilments(input: { olderThanSeconds: number }): Promise<number> {
      if (!deps.workflows) return 0;
      const rows = await deps.dataSource.getRepository(Order).find({
        select: { id: true, publicId: true, partnerId: true, environment: true, domain: true },
        where: { workflowStarted: false, createdAt: LessThan(new Date(Date.now() - input.olderThanSeconds * 1000)) },
        order: { createdAt: 'ASC' },
        take: 100,
      });
      for (const row of rows) {
        heartbeatOrStop();
        try {
          await startOrderFulfilment(deps.workflows, { orderId: row.id, orderPublicId: row.publicId, partnerId: row.partnerId, environment: row.environment, domain: row.domain });
          await markWorkflowStarted(deps.dataSource, row.id);
        } catch (err) {
          log.warn('recovery sweep: could not start a fulfilment', { order_id: row.publicId, error: (err as Error).message });
        }
      }
      return rows.length;
    },
  };
}
