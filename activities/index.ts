/**
 * createActivities(deps): every piece of I/O the workflows need, one factory per capability
 * (activities/<capability>.ts), merged here into the one `Activities` type the workflows import
 * (a type import only, so no database or network code can reach the workflow sandbox).
 */
import { createBrokerageActivities } from './brokerage';
import type { ActivityDeps } from './deps';
import { createFinanceActivities } from './finance';
import { createMaintenanceActivities } from './maintenance';
import { createMailActivities } from './mail';
import { createOrderActivities } from './orders';
import { createSaleWindowActivities } from './sale-windows';
import { createWebhookActivities } from './webhooks';

export type { ActivityDeps } from './deps';
export { heartbeatOrStop } from './heartbeat';

export function createActivities(deps: ActivityDeps) {
  return {
    ...createBrokerageActivities(deps),
    ...createOrderActivities(deps),
    ...createWebhookActivities(deps),
    ...createSaleWindowActivities(deps),
    ...createFinanceActivities(deps),
    ...createMaintenanceActivities(deps),
    ...createMailActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
