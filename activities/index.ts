/**
 * createActivities(deps): every piece of I/O the workflows need. Workflows import only the type
 * `Activities`, so no database or network code can reach the workflow sandbox.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { DataSource } from 'typeorm';
import type { OrderStatus } from '../workflows/messages';
import { affectedCount } from '../src/db/query';
import { advanceOrder, type TransitionResult } from '../src/orders/fulfilment';
import { expireQuote } from '../src/orders/quotes';
import { markWorkflowStarted } from '../src/orders/orders';
import { SandboxRegistrar, TransferRejected, type RegistrarPort, type TransferOrder } from '../src/orders/registrar';
import { startOrderFulfilment, type WorkflowStarter } from '../src/orders/start-workflows';
import { SecretBox } from '../src/auth/secret-box';
import type { Environment } from '../src/config';
import { attemptDelivery, markDeliveryFailed, nextEventsToDeliver } from '../src/webhooks/deliveries';
import { lateDeliveries, notifyEventsAppended, wakeDelivery } from '../src/webhooks/notify';

export interface ActivityDeps {
  dataSource: DataSource;
  /** Opens webhook secrets for signing deliveries. */
  masterKey: Buffer;
  /** Starts workflows (the recovery sweep); absent in tests that do not need it. */
  workflows?: WorkflowStarter;
  /** WEBHOOK_ALLOW_LOOPBACK; absent means off. */
  allowLoopbackWebhooks?: boolean;
  /** Registrar adapter per environment; sandbox by default for both until a live adapter exists. */
  registrars?: { sandbox: RegistrarPort; live: RegistrarPort };
}

export function createActivities(deps: ActivityDeps) {
  const sandbox = new SandboxRegistrar(deps.dataSource);
  const registrars = deps.registrars ?? { sandbox, live: sandbox };
  const delivery = { dataSource: deps.dataSource, secretBox: new SecretBox(deps.masterKey), allowLoopback: deps.allowLoopbackWebhooks ?? false };

  async function transferOrder(orderId: string): Promise<{ order: TransferOrder; registrar: RegistrarPort }> {
    const [row] = (await deps.dataSource.query('SELECT id, domain, external_payment_ref, environment FROM orders WHERE id = $1', [orderId])) as Array<{
      id: string;
      domain: string;
      external_payment_ref: string;
      environment: 'sandbox' | 'live';
    }>;
    if (!row) throw ApplicationFailure.nonRetryable(`order ${orderId} does not exist`, 'TransferRejected');
    return { order: { orderId: row.id, domain: row.domain, externalPaymentRef: row.external_payment_ref }, registrar: registrars[row.environment] };
  }

  /** Runs a registrar call; a TransferRejected becomes a non-retryable failure of that type. */
  async function registrarCall<T>(orderId: string, call: (r: RegistrarPort, o: TransferOrder, attempt: number) => Promise<T>): Promise<T> {
    const { order, registrar } = await transferOrder(orderId);
    try {
      return await call(registrar, order, Context.current().info.attempt);
    } catch (err) {
      if (err instanceof TransferRejected) throw ApplicationFailure.nonRetryable(err.message, 'TransferRejected');
      throw err;
    }
  }

  return {
    /** Deletes request nonces first seen before `seenBefore`; returns how many. */
    async pruneNonces(input: { seenBefore: string }): Promise<number> {
      return affectedCount(deps.dataSource, 'DELETE FROM request_nonces WHERE seen_at < $1', [input.seenBefore]);
    },

    async expireQuote(input: { quotePublicId: string }): Promise<'expired' | 'consumed' | 'absent'> {
      return expireQuote(deps.dataSource, input.quotePublicId);
    },

    async advanceOrder(input: { orderId: string; to: OrderStatus; at: string; detail?: string }): Promise<TransitionResult> {
      const result = await advanceOrder(deps.dataSource, input);
      if (result.applied && result.event && deps.workflows) await notifyEventsAppended(deps.dataSource, deps.workflows, result.event.partnerId, result.event.environment);
      return { status: result.status, applied: result.applied };
    },

    async lockDomain(input: { orderId: string }): Promise<void> {
      await registrarCall(input.orderId, (r, o, a) => r.lockDomain(o, a));
    },

    async requestTransfer(input: { orderId: string }): Promise<string> {
      return registrarCall(input.orderId, (r, o, a) => r.requestTransfer(o, a));
    },

    async checkTransfer(input: { orderId: string }) {
      return registrarCall(input.orderId, (r, o, a) => r.checkTransfer(o, a));
    },

    async cancelTransfer(input: { orderId: string }): Promise<void> {
      await registrarCall(input.orderId, (r, o, a) => r.cancelTransfer(o, a));
    },

    async nextEventsToDeliver(input: { partnerId: string; environment: Environment; limit: number }): Promise<Array<{ id: string; seq: number }>> {
      return (await nextEventsToDeliver(delivery, input.partnerId, input.environment, input.limit)).map((e) => ({ id: e.id, seq: e.seq }));
    },

    /** One delivery attempt; throws (so Temporal retries with back-off) unless the endpoint answered 2xx. */
    async deliverEvent(input: { partnerId: string; environment: Environment; eventId: string }): Promise<void> {
      const result = await attemptDelivery(delivery, input.partnerId, input.environment, input.eventId);
      if (!result.ok) throw ApplicationFailure.retryable(`delivery of ${input.eventId} failed: ${result.error}`, 'DeliveryFailed');
    },

    async markDeliveryFailed(input: { partnerId: string; environment: Environment; eventId: string; error: string }): Promise<void> {
      await markDeliveryFailed(delivery, input.partnerId, input.environment, input.eventId, input.error);
    },

    /** Wakes the delivery of every endpoint that is behind its events; returns how many. */
    async wakeLateDeliveries(): Promise<number> {
      if (!deps.workflows) return 0;
      const late = await lateDeliveries(deps.dataSource);
      for (const { partnerId, environment } of late) await wakeDelivery(deps.workflows, partnerId, environment);
      return late.length;
    },

    /** Starts fulfilment for orders whose workflow was never started; returns how many. */
    async startUnstartedFulfilments(input: { olderThanSeconds: number }): Promise<number> {
      if (!deps.workflows) return 0;
      const rows = (await deps.dataSource.query(
        `SELECT id, public_id, partner_id, environment, domain FROM orders
         WHERE NOT workflow_started AND created_at < now() - make_interval(secs => $1) ORDER BY created_at LIMIT 100`,
        [input.olderThanSeconds],
      )) as Array<{ id: string; public_id: string; partner_id: string; environment: 'sandbox' | 'live'; domain: string }>;
      for (const row of rows) {
        await startOrderFulfilment(deps.workflows, { orderId: row.id, orderPublicId: row.public_id, partnerId: row.partner_id, environment: row.environment, domain: row.domain });
        await markWorkflowStarted(deps.dataSource, row.id);
      }
      return rows.length;
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
