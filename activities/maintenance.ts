/** The maintenance loops' I/O: pruning nonces and the recovery sweep's three steps. */
import { log } from '@temporalio/activity';
import { LessThan } from 'typeorm';
import { Order } from '../src/db/entities/order';
import { RequestNonce } from '../src/db/entities/admission';
import { ReferralSale } from '../src/db/entities/referral';
import { markWorkflowStarted } from '../src/orders/orders';
import { relistSandboxNames } from '../src/discovery/sandbox-relist';
import { checkCardAttempts, HOSTED_STALLED_SECONDS, settleHostedAttempts, settleStalledPayment, stalledPayments, unsignalledPaidSessions } from '../src/checkout/sessions';
import { SandboxCardProcessor } from '../src/checkout/payments';
import { refundBuyerCard, unrefundedBuyers } from '../src/checkout/card-refunds';
import { makeCommissionPayable, pendingCommissionsPastWindow } from '../src/finance/sales';
import { lateDeliveries, markWoken } from '../src/webhooks/notify';
import type { ActivityDeps } from './deps';
import { pendingEmails } from '../src/mail/send';
import { recoverySweepRound } from '../src/metrics/metrics';
import { unstartedOnboardings } from '../src/partners/onboarding-flow';
import { heartbeatOrStop } from './heartbeat';

/**
 * The sweep's loop over rows or partners: a heartbeat (and a stop when cancelled) before each, and
 * one item's failure logged and skipped, so it never stops the others; the next round retries it.
 * Returns how many succeeded.
 */
async function eachOrLog<T>(items: T[], failed: string, fields: (item: T) => Record<string, string>, run: (item: T) => Promise<unknown>): Promise<number> {
  let done = 0;
  for (const item of items) {
    heartbeatOrStop();
    try {
      await run(item);
      done++;
    } catch (err) {
      log.warn(`recovery sweep: ${failed}`, { ...fields(item), error: (err as Error).message });
    }
  }
  return done;
}

export function createMaintenanceActivities(deps: ActivityDeps) {
  const payments = deps.payments ?? { sandbox: new SandboxCardProcessor(deps.dataSource) };
  return {
    /**
     * The card money a crash (or a slow processor) left unsettled, each kind a step of its own
     * whose rows fail independently: commissions still pending after their sale's 30-day window (a
     * session workflow that never reached that step: ended before it existed, or pinned to a build
     * without it), paid sessions whose workflow was never told (a lost paid signal), payments left
     * out with the processor (each recorded as its sale, given back, or its charge voided),
     * attempts given up before the processor answered, live attempts whose events were lost, and
     * buyers of refunded or failed sales whose card was not refunded yet. The steps that need no
     * card processor go first, so a slow processor never holds them back. Returns how many were
     * settled. (One activity, as the recovery workflow has always called it, so that its runs in
     * flight replay unchanged.)
     */
    async settleStalledPayments(input: { olderThanSeconds: number }): Promise<number> {
      const payable = await eachOrLog(await pendingCommissionsPastWindow(deps.dataSource), 'could not make a commission payable', (orderId) => ({ order_id: orderId }), async (orderId) => {
        const outcome = await makeCommissionPayable(deps.dataSource, orderId, new Date());
        log.info('recovery sweep: a commission past its refund window made payable', { order_id: orderId, outcome });
      });
      const starters = deps.starters;
      const signalled = starters
        ? await eachOrLog(await unsignalledPaidSessions(deps.dataSource, input.olderThanSeconds), 'could not tell a checkout workflow of its payment', (s) => ({ session_id: s.publicId }), async (session) => {
            await starters.checkoutPaid(session.publicId);
            log.info('recovery sweep: a lost paid signal sent again', { session_id: session.publicId });
          })
        : 0;
      const settled = await eachOrLog(await stalledPayments(deps.dataSource, input.olderThanSeconds), 'could not settle a payment', (s) => ({ session_id: s.publicId }), async (session) => {
        const outcome = await settleStalledPayment({ dataSource: deps.dataSource, payments }, session);
        // Its workflow learns of the payment now (its refund window starts); the sweep starts the fulfilment.
        if (outcome === 'recorded') await deps.starters?.checkoutPaid(session.publicId);
        log.info('recovery sweep: a stalled payment settled', { session_id: session.publicId, outcome });
      });
      // Attempts given up before the processor answered are asked again (an approval for one is voided).
      const checked = await checkCardAttempts({ dataSource: deps.dataSource, payments }, heartbeatOrStop, (key, err) =>
        log.warn('recovery sweep: could not ask about a card attempt given up; asked again next round', { idempotency_key: key, error: err.message }),
      ).catch((err: Error) => {
        log.warn('recovery sweep: could not ask about card attempts given up', { error: err.message });
        return 0;
      });
      // Live attempts on the processor's own page whose events were lost: asked of the processor.
      const hostedSettled = await settleHostedAttempts({ dataSource: deps.dataSource, hosted: deps.hosted ?? {} }, HOSTED_STALLED_SECONDS, (message, fields) => log.warn(message, fields), heartbeatOrStop).catch((err: Error) => {
        log.warn('recovery sweep: could not ask the processor about hosted attempts', { error: err.message });
        return 0;
      });
      const refunded = await eachOrLog(await unrefundedBuyers(deps.dataSource), "could not refund a buyer's card", (orderId) => ({ order_id: orderId }), async (orderId) => {
        await refundBuyerCard({ dataSource: deps.dataSource, payments, hosted: deps.hosted }, orderId);
        log.info("recovery sweep: a buyer's card refunded after a crash", { order_id: orderId });
      });
      return payable + signalled + settled + checked + hostedSettled + refunded;
    },

    /** Lists again the sandbox names whose transfer completed before `completedBefore`; returns how many. */
    async relistSandboxNames(input: { completedBefore: string }): Promise<number> {
      return relistSandboxNames(deps.dataSource, new Date(input.completedBefore));
    },

    /** Deletes request nonces first seen before `seenBefore`; returns how many. */
    async pruneNonces(input: { seenBefore: string }): Promise<number> {
      const pruned = await deps.dataSource.getRepository(RequestNonce).delete({ seenAt: LessThan(new Date(input.seenBefore)) });
      return pruned.affected ?? 0;
    },

    /**
     * Wakes the delivery of every endpoint that is behind its events, and starts what a process
     * that died after its commit left unstarted a minute on: the workflow of every email still
     * pending (a running one is left alone), and of every partner application never started;
     * returns how many were woken or started (one refused start or signal is logged and skipped).
     */
    async wakeLateDeliveries(): Promise<number> {
      const starters = deps.starters;
      if (!starters) return 0;
      const woken = await eachOrLog(await lateDeliveries(deps.dataSource), 'could not wake a delivery', (late) => ({ partner_id: late.partnerId, environment: late.environment }), async (late) => {
        await starters.wakeDelivery(late.partnerId, late.environment, late.idle);
        await markWoken(deps.dataSource, late.partnerId, late.environment);
      });
      const emails = await eachOrLog(await pendingEmails(deps.dataSource, 60_000), "could not start an email's workflow", (emailId) => ({ email_id: emailId }), (emailId) => starters.email(emailId));
      const onboardings = await eachOrLog(await unstartedOnboardings(deps.dataSource), "could not start an application's workflow", (a) => ({ application_id: a.id }), (a) => starters.onboarding(a));
      // The round's last step is done: the operators' gauge (alert RecoverySweepStalled).
      recoverySweepRound.set(Date.now() / 1000);
      return woken + emails + onboardings;
    },

    /** Starts the 30-day window of referred sales whose workflow was never started; returns how many. */
    async startUnstartedReferralWindows(input: { olderThanSeconds: number }): Promise<number> {
      const starters = deps.starters;
      if (!starters) return 0;
      const sales = await deps.dataSource.getRepository(ReferralSale).find({
        where: { workflowStarted: false, occurredAt: LessThan(new Date(Date.now() - input.olderThanSeconds * 1000)) },
        order: { occurredAt: 'ASC' },
        take: 100,
      });
      await eachOrLog(sales, 'could not start a referral window', (sale) => ({ sale_id: sale.publicId }), (sale) =>
        starters.referralCommission(sale),
      );
      return sales.length;
    },

    /** Starts fulfilment for orders whose workflow was never started; returns how many. */
    async startUnstartedFulfilments(input: { olderThanSeconds: number }): Promise<number> {
      const starters = deps.starters;
      if (!starters) return 0;
      const rows = await deps.dataSource.getRepository(Order).find({
        select: { id: true, publicId: true, partnerId: true, environment: true, domain: true, paymentModel: true },
        where: { workflowStarted: false, createdAt: LessThan(new Date(Date.now() - input.olderThanSeconds * 1000)) },
        order: { createdAt: 'ASC' },
        take: 100,
      });
      await eachOrLog(rows, 'could not start a fulfilment', (row) => ({ order_id: row.publicId }), async (row) => {
        await starters.orderFulfilment({ orderId: row.id, orderPublicId: row.publicId, partnerId: row.partnerId, environment: row.environment, domain: row.domain, ...(row.paymentModel === 'service_collected' ? { serviceCollected: true } : {}) });
        await markWorkflowStarted(deps.dataSource, row.id);
      });
      return rows.length;
    },
  };
}
