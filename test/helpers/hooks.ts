/**
 * Mocha root hooks: the real stack comes up once before all tests and goes down after. After the
 * last test, the whole ledger must reconcile (every test's sales, refunds, payouts and referral
 * lines together): a difference fails the run, listed.
 */
import { reconcile } from '../../src/finance/reconcile';
import { bootStack, getStack, teardownStack } from './stack';
import { recordingExamples, writeExamples } from './examples';
import { partnerRoutes } from '../../src/api/app';

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(10 * 60 * 1000);
    await bootStack();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60 * 1000);
    let report: Awaited<ReturnType<typeof reconcile>> | undefined;
    if (recordingExamples) writeExamples(getStack().config.projectRoot, partnerRoutes(getStack().appDeps).map((r) => r.operationId));
    try {
      report = await reconcile(getStack().dataSource);
    } finally {
      await teardownStack();
    }
    if (!report.ok) throw new Error(`the ledger does not reconcile after the suite:\n${report.differences.map((d) => JSON.stringify(d)).join('\n')}`);
  },
};
