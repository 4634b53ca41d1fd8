/** What the benchmarks share. */
import { readdirSync, readFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';

/** A free TCP port on loopback (for a benchmark's own Postgres). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * CPU seconds (user + system, from /proc) of this machine's processes, summed per group: each
 * process counts in the first group whose pattern its command line matches. Processes that
 * ended between two readings drop out, so take both readings while the groups run.
 */
export function cpuSecondsByGroup(groups: Record<string, RegExp>): Record<string, number> {
  const totals: Record<string, number> = Object.fromEntries(Object.keys(groups).map((g) => [g, 0]));
  const tick = 100; // USER_HZ on Linux
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const group = Object.keys(groups).find((g) => groups[g].test(cmdline));
      if (!group) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      totals[group] += (Number(fields[11]) + Number(fields[12])) / tick;
    } catch {
      // the process ended meanwhile
    }
  }
  return totals;
}
