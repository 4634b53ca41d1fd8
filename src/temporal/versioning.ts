/**
 * Worker Versioning (Temporal worker deployments). Each worker announces its version: the
 * deployment `partner-api` and a build id made of the package version and the commit. Runs with
 * an end are PINNED to the version that started them (a quote, a checkout session, a referral
 * window, a month close, a payout run): the previous release's workers must keep running until
 * its pinned runs drain (docs/design/testing.md, Changing a workflow safely). Open-ended ones AUTO_UPGRADE to the current version and
 * keep replay safety with `patched()` (fulfilment, brokerage, webhook delivery, which continues
 * as new without end, and the maintenance loops). The
 * time-skipping test server has no worker deployments, so tests run unversioned workers except
 * the dev-server test of two versions side by side.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';

export const DEPLOYMENT_NAME = 'partner-api';

export interface WorkerVersion {
  deploymentName: string;
  buildId: string;
}

/** The release's package version (package.json). */
export function packageVersion(projectRoot: string): string {
  return (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/** `<package version>+<commit>`: TEMPORAL_BUILD_ID when given (an image has no .git), else from git. */
export function workerBuildId(projectRoot: string, override?: string): string {
  if (override) return override;
  const version = packageVersion(projectRoot);
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    // Not a checkout: the build id says so.
  }
  return `${version}+${commit}`;
}

/** This process's worker version, or undefined when Worker Versioning is off. */
export function configuredVersion(config: { projectRoot: string; temporal: { workerVersioning: boolean; buildId?: string } }): WorkerVersion | undefined {
  return config.temporal.workerVersioning ? { deploymentName: DEPLOYMENT_NAME, buildId: workerBuildId(config.projectRoot, config.temporal.buildId) } : undefined;
}

export function deploymentOptions(version: WorkerVersion): NonNullable<WorkerOptions['workerDeploymentOptions']> {
  return { version, useWorkerVersioning: true, defaultVersioningBehavior: 'AUTO_UPGRADE' };
}

/**
 * Makes `version` the deployment's current version when it has none yet (its first versioned
 * release, or a dev stack): a later release's worker takes no new run until an operator ramps or
 * promotes it (`admin deploy`, src/admin/deploy.ts), so a restart never moves the deployment and
 * a rollback stays rolled back. The server knows a version only once one of its workers has
 * polled, so this waits for that for up to `timeoutMs`. Answers whether `version` is current.
 */
export async function makeCurrentIfFirst(client: Client, namespace: string, version: WorkerVersion, timeoutMs = 60_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { workerDeploymentInfo: info, conflictToken } = await client.workflowService.describeWorkerDeployment({ namespace, deploymentName: version.deploymentName });
      const mine = (info?.versionSummaries ?? []).find((v) => v.deploymentVersion?.buildId === version.buildId);
      if (mine) {
        const routing = info?.routingConfig;
        const current = routing?.currentDeploymentVersion?.buildId;
        if (current) return current === version.buildId;
        // No current version is a first release only when none was ever set: an operator who
        // routed new runs to unversioned workers (current set to none) is not overruled by a
        // versioned worker that restarts (nor one who ramped it), nor is a deployment that knows other versions.
        const others = (info?.versionSummaries ?? []).some((v) => v.deploymentVersion?.buildId !== version.buildId);
        if (routing?.currentVersionChangedTime || routing?.rampingVersionChangedTime || others) return false;
        await client.workflowService.setWorkerDeploymentCurrentVersion({ namespace, deploymentName: version.deploymentName, buildId: version.buildId, conflictToken, identity: `partner-api ${version.buildId}` });
        return true;
      }
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`could not make ${version.deploymentName} ${version.buildId} the current version: ${(err as Error).message}`);
    }
    if (Date.now() > deadline) throw new Error(`${version.deploymentName} ${version.buildId} was not registered within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
