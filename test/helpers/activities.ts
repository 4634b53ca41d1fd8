/**
 * The worker's activities run straight from a test (MockActivityEnvironment), over the suite's
 * database unless `deps` says otherwise: the steps an order's workflow takes, and the recovery
 * sweep's card-money step.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import type { ActivityDeps } from '../../activities/deps';
import type { OrderStatus } from '../../workflows/messages';
import { getStack } from './stack';

/** The statuses a transfer goes through to completion, in order. */
export const TO_COMPLETED: OrderStatus[] = ['DOMAIN_LOCKED', 'TRANSFER_INITIATED', 'TRANSFER_PENDING', 'TRANSFER_COMPLETED'];

function activities(deps: Partial<ActivityDeps>) {
  const s = getStack();
  return createActivities({ dataSource: s.dataSource, masterKey: s.masterKey, ...deps });
}

/** Moves the order through `to` in turn with the fulfilment's own step (advanceOrder), each at the current time. */
export async function advanceOrderThrough(orderId: string, to: OrderStatus[], deps: Partial<ActivityDeps> = {}): Promise<void> {
  const { advanceOrder } = activities(deps);
  for (const status of to) await new MockActivityEnvironment().run(advanceOrder, { orderId, to: status, at: new Date().toISOString() });
}

/** One round of the recovery sweep's card-money step; answers how many it settled. */
export async function sweepCardMoney(deps: Partial<ActivityDeps> = {}, olderThanSeconds = 0): Promise<number> {
  return (await new MockActivityEnvironment().run(activities(deps).settleStalledPayments, { olderThanSeconds })) as number;
}
