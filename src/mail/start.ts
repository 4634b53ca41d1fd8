/** Starting the `email:<id>` workflows of emails queued by a step that has committed. */
import type { DataSource } from 'typeorm';
import { In } from 'typeorm';
import { Email } from '../db/entities/email';
import { emailWorkflowId } from '../../workflows/messages';
import { startWorkflow, type WorkflowStarter } from '../temporal/start';

/**
 * The email's workflow: a running one is left alone; a closed one is started again (an email an
 * operator set back to pending, or whose workflow was terminated). Never a second email: the
 * activity sends a row that is already sent never again.
 */
export async function startEmail(workflows: WorkflowStarter, emailId: string, kind?: string): Promise<void> {
  await startWorkflow(workflows, 'emailWorkflow', {
    workflowId: emailWorkflowId(emailId),
    args: [{ emailId }],
    mode: 'singleton',
    summary: `Email${kind ? ` (${kind})` : ''} ${emailId}`,
  });
}

/** The workflows of the pending emails of these business events (the recovery sweep starts any this misses). */
export async function startEmailsOf(workflows: WorkflowStarter, dataSource: DataSource, keys: string[]): Promise<void> {
  if (!keys.length) return;
  const pending = await dataSource.getRepository(Email).find({ select: { id: true, kind: true }, where: { key: In(keys), status: 'pending' } });
  for (const email of pending) await startEmail(workflows, email.id, email.kind);
}
