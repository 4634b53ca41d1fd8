/** Operators' commands on brokerage cases (CONTRACT §12): moving a case, revoking its progress link. */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import { linksBaseUrl, type Config } from '../config';
import type { SecretBox } from '../auth/secret-box';
import { findCase, loadCaseView, type CaseView } from '../brokerage/cases';
import { revokeProgressLink } from '../brokerage/moves';
import { ProgressLinkToken } from '../brokerage/progress-token';
import { caseWorkflowId, FINAL_CASE_STATUSES, moveProblem, moveUpdate, type CaseMove } from '../../workflows/brokerage-messages';
import { withTemporal } from './temporal';


function token(secretBox: SecretBox): ProgressLinkToken {
  return new ProgressLinkToken(secretBox.deriveKeys('brokerage-progress-token'));
}

/**
 * Sends the `move` Update (the same one the Temporal UI sends) and answers the case once its
 * workflow has applied the move. A refusal by the workflow's validator is an error with its reason.
 */
export async function moveCase(config: Config, dataSource: DataSource, secretBox: SecretBox, casePublicId: string, move: CaseMove): Promise<CaseView> {
  const c = await findCase(dataSource.manager, casePublicId);
  if (!c) throw new Error(`no brokerage case ${casePublicId}`);
  // A final case's workflow has ended, so no Update can reach its validator: the same reason, from the case.
  const final = moveProblem(casePublicId, c.status, move);
  if (final && FINAL_CASE_STATUSES.includes(c.status)) throw new Error(final);
  await withTemporal(config, async (client) => {
    try {
      await client.workflow.getHandle(caseWorkflowId(casePublicId)).executeUpdate(moveUpdate, { args: [move] });
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) throw new Error(err.cause.message);
      if (err instanceof WorkflowNotFoundError) throw new Error(`case ${casePublicId} does not move any more: its workflow has ended`);
      throw err;
    }
  });
  return loadCaseView(dataSource.manager, token(secretBox), (await findCase(dataSource.manager, casePublicId))!, linksBaseUrl(config));
}

/** Revokes the case's progress link; answers the case with its new link. */
export async function revokeCaseLink(config: Config, dataSource: DataSource, secretBox: SecretBox, casePublicId: string): Promise<CaseView> {
  const c = await revokeProgressLink(dataSource, casePublicId);
  if (!c) throw new Error(`no brokerage case ${casePublicId}`);
  return loadCaseView(dataSource.manager, token(secretBox), c, linksBaseUrl(config));
}
