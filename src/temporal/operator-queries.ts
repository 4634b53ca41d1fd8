/**
 * Visibility queries operators paste into the Temporal UI's search (or `temporal workflow list
 * --query`); docs/operators/runbook.md lists them. Kept here so a test runs the same strings.
 */

/** Open runs of a type that have held one business status since before `since`. */
export function stuckQuery(input: { workflowType: string; businessStatus: string; since: Date }): string {
  return [
    `WorkflowType = '${input.workflowType}'`,
    `ExecutionStatus = 'Running'`,
    `BusinessStatus = '${input.businessStatus}'`,
    `BusinessStatusSince < '${input.since.toISOString()}'`,
  ].join(' AND ');
}
