/**
 * createActivities(deps): every piece of I/O the workflows need. Workflows import only the type
 * `Activities`, so no database or network code can reach the workflow sandbox.
 */
import type { DataSource } from 'typeorm';

export interface ActivityDeps {
  dataSource: DataSource;
}

export function createActivities(deps: ActivityDeps) {
  return {
    /** Deletes request nonces first seen before `seenBefore`; returns how many. */
    async pruneNonces(input: { seenBefore: string }): Promise<number> {
      const [, count] = (await deps.dataSource.query('DELETE FROM request_nonces WHERE seen_at < $1', [input.seenBefore])) as [unknown, number];
      return count;
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
