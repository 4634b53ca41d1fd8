/**
 * A workflow's Worker Versioning behaviour, declared only when the worker serving it is versioned:
 * a server refuses a behaviour from an unversioned worker ("versioning behavior cannot be
 * specified without deployment options"), and tests and TEMPORAL_WORKER_VERSIONING=false run
 * unversioned workers.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { VersioningBehavior, WorkflowDefinitionOptions } from '@temporalio/common';

export const onVersionedWorker = (behavior: VersioningBehavior) => (): WorkflowDefinitionOptions =>
  workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: behavior } : {};
