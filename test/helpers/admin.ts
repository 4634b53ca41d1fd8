/** The operators' command line (`npm run admin`), run as a process against the suite's Postgres and Temporal. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { getStack } from './stack';

const run = promisify(execFile);
const ADMIN_TIMEOUT_MS = 90_000;

export async function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return adminWith({}, ...args);
}

/** The same, with some of its environment replaced (another Temporal server, say). */
export async function adminWith(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const s = getStack();
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(s.config.projectRoot, 'dist/src/admin/cli.js'), ...args], {
      env: { ...process.env, DATABASE_URL: s.databaseUrl, MASTER_KEY: s.masterKey.toString('hex'), TEMPORAL_NAMESPACE: 'default', ...(env.TEMPORAL_ADDRESS ? {} : { TEMPORAL_ADDRESS: s.env.address, TEMPORAL_TASK_QUEUE: s.taskQueue }), ...env },
      // A command that hangs fails its test with what it printed, instead of holding the file past its timeout.
      timeout: ADMIN_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number | null; killed?: boolean; stdout: string; stderr: string };
    if (e.killed) return { code: -1, stdout: e.stdout, stderr: `${e.stderr}\n(admin ${args.join(' ')} did not finish within ${ADMIN_TIMEOUT_MS / 1000} s: killed)` };
    return { code: e.code ?? -1, stdout: e.stdout, stderr: e.stderr };
  }
}
