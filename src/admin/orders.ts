/** Operators' commands on orders: the outcome of a live transfer carried out by hand (CONTRACT §12). */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import type { Config } from '../config';
import { Order } from '../db/entities/order';
import { loadOrderView, type OrderView } from '../orders/order-view';
import { orderWorkflowId, transferOutcomeUpdate, type TransferOutcome } from '../../workflows/messages';
import { withTemporal } from './temporal';

/**
 * Sends the recordTransferOutcome Update (the same one the Temporal UI sends) and answers the
 * order once its workflow has applied it. A refusal by the workflow's validator (the order does
 * not wait for an operator) is an error with the workflow's reason.
 */
export async function recordTransferOutcome(config: Config, dataSource: DataSource, publicId: string, outcome: TransferOutcome): Promise<OrderView> {
  const orders = dataSource.getRepository(Order);
  if (!(await orders.existsBy({ publicId }))) throw new Error(`no order ${publicId}`);
  await withTemporal(config, async (client) => {
    try {
      await client.workflow.getHandle(orderWorkflowId(publicId)).executeUpdate(transferOutcomeUpdate, { args: [outcome] });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) throw new Error(err.cause.message);
      if (err instanceof WorkflowNotFoundError) throw new Error(`order ${publicId} is not waiting for an operator: its fulfilment has ended`);
      throw err;
    }
  });
  return loadOrderView(dataSource.manager, await orders.findOneByOrFail({ publicId }));
}
