/**
 * `npm run chaos`: the chaos run (bench/chaos-run.ts) at full size. It starts its own `npm start`
 * (fresh data, free ports; nothing of a running one is touched), places CHAOS_ORDERS orders (500)
 * with checkouts, refunds, brokerage moves and clicks at CHAOS_CONCURRENCY (8) for CHAOS_PARTNERS
 * partners (40), kills each part CHAOS_KILLS times (3) with SIGKILL, then checks that nothing was
 * lost and prints the summary and the restart costs. Exits 1 on any loss.
 */
import { restartTable, runChaos } from './chaos-run';

async function main(): Promise<void> {
  const settings = {
    orders: Number(process.env.CHAOS_ORDERS ?? 500),
    killsPerPart: Number(process.env.CHAOS_KILLS ?? 3),
    concurrency: Number(process.env.CHAOS_CONCURRENCY ?? 8),
    partners: Number(process.env.CHAOS_PARTNERS ?? 40),
    deliveryWaitMs: Number(process.env.CHAOS_DELIVERY_WAIT_S ?? 900) * 1000,
    log: (m: string) => process.stderr.write(`[chaos] ${m}\n`),
  };
  const report = await runChaos(settings);
  const byPart = new Map<string, number>();
  for (const k of report.kills) byPart.set(k.part, (byPart.get(k.part) ?? 0) + 1);
  const c = report.counts;
  process.stdout.write(
    [
      '',
      `Chaos run, ${new Date().toISOString().slice(0, 10)}: ${report.ok ? 'nothing lost' : 'FAILED'} (${report.seconds.toFixed(0)} s)`,
      `  kills (SIGKILL): ${[...byPart].map(([part, n]) => `${part} ${n}`).join(', ')}`,
      `  orders ${c.orders}, hosted checkouts paid ${c.checkouts}, refunds ${c.refunds} (+${c.refundsRefused} refused after the transfer), brokerage moves ${c.brokerageMoves}, clicks ${c.clicks} (${c.clicksStored} counted: one address, at most 30 a minute)`,
      `  events ${c.events}, each delivered (deliveries ${c.deliveries}, ${c.deliveriesFailedOnPurpose} answered 500 on purpose, ${c.duplicateDeliveries} duplicates removed by id)`,
      `  the partners' client retried ${c.retries} times; ${c.quotesSkipped} names skipped (a retried quote or session found them reserved); replays refused after a Redis restart: ${c.replaysRefused}`,
      report.ok ? '  no order lost, doubled or stuck; every event once; reconcile clean; Ctrl-C stopped everything' : `  ${report.problems.length} problem(s), below; Ctrl-C stopped everything: ${report.stoppedCleanly ? 'yes' : 'no'}`,
      '',
      restartTable(report.kills),
      '',
      ...(report.problems.length ? ['Problems:', ...report.problems.map((p) => `  - ${p}`), ''] : []),
    ].join('\n'),
  );
  process.exit(report.ok ? 0 : 1);
}

void main();
