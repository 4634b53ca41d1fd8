import { WorkflowIdConflictPolicy, type Client } from '@temporalio/client';
import { NONCE_RETENTION_WORKFLOW_ID } from '../../workflows/nonce-retention';
import { fulfilmentRecoveryWorkflow, nonceRetentionWorkflow } from '../../workflows';
import { FULFILMENT_RECOVERY_WORKFLOW_ID } from '../../workflows/fulfilment-recovery';
import { monthEndWorkflow, MONTH_END_WORKFLOW_ID } from '../../workflows/month-end';

/** Starts the long-running maintenance workflows once per namespace; a second call is a no-op. */
export async function ensureMaintenanceWorkflows(client: Client, taskQueue: string): Promise<void> {
  await client.workflow.start(nonceRetentionWorkflow, {
    workflowId: NONCE_RETENTION_WORKFLOW_ID,
    taskQueue,
    args: [{ prunedTotal: 0 }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
  await client.workflow.start(fulfilmentRecoveryWorkflow, {
    workflowId: FULFILMENT_RECOVERY_WORKFLOW_ID,
    taskQueue,
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
  await client.workflow.start(monthEndWorkflow, {
    workflowId: MONTH_END_WORKFLOW_ID,
    taskQueue,
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
}
