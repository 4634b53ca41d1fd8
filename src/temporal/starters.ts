/**
 * The workflow starts that activities make (the recovery sweep, an event appended by a workflow's
 * step), bound to one client and task queue. The worker hands them to createActivities(deps), so
 * no activity imports a start function and the dependency runs one way: worker → activities,
 * worker → starters → capabilities.
 */
import type { DataSource } from 'typeorm';
import { signalCheckoutPaid, startReferralCommission } from '../checkout/sessions';
import type { Environment } from '../config';
import { startOrderFulfilment } from '../orders/start-workflows';
import { notifyEventsAppended, wakeDelivery } from '../webhooks/notify';
import { startEmail, startEmailsOf } from '../mail/start';
import { startOnboarding } from '../partners/onboarding-flow';
import type { WorkflowStarter } from './start';

export interface Starters {
  /** An order's fulfilment workflow (once per order). */
  orderFulfilment(order: { orderId: string; orderPublicId: string; partnerId: string; environment: Environment; domain: string; serviceCollected?: boolean }): Promise<void>;
  /** Tells a checkout session's workflow that the session was paid (its refund window starts), and marks it told. */
  checkoutPaid(sessionPublicId: string): Promise<void>;
  /** A referred sale's commission window (once per sale). */
  referralCommission(sale: { publicId: string; partnerId: string; domain: string; environment: Environment }): Promise<void>;
  /** A partner's webhook delivery: started, or signalled when it waits for events (`idle`). */
  wakeDelivery(partnerId: string, environment: Environment, idle: boolean): Promise<void>;
  /** After events were appended for a partner: wakes its delivery when it has an enabled endpoint. */
  eventsAppended(partnerId: string, environment: Environment): Promise<void>;
  /** A queued email's workflow (once per email). */
  email(emailId: string): Promise<void>;
  /** The workflows of the pending emails of these business events. */
  emailsOf(keys: string[]): Promise<void>;
  /** A partner's onboarding workflow (once per application), marked started. */
  onboarding(application: { id: string; stage: 'applied' | 'live_requested'; company: string }): Promise<void>;
}

export function workflowStarters(workflows: WorkflowStarter, dataSource: DataSource): Starters {
  return {
    orderFulfilment: (order) => startOrderFulfilment(workflows, order),
    referralCommission: (sale) => startReferralCommission(workflows, dataSource, sale.publicId, sale.partnerId, sale.domain, sale.environment),
    wakeDelivery: (partnerId, environment, idle) => wakeDelivery(workflows, partnerId, environment, idle),
    eventsAppended: (partnerId, environment) => notifyEventsAppended(dataSource, workflows, partnerId, environment),
    checkoutPaid: (sessionPublicId) => signalCheckoutPaid(workflows, dataSource, sessionPublicId),
    email: (emailId) => startEmail(workflows, emailId),
    emailsOf: (keys) => startEmailsOf(workflows, dataSource, keys),
    onboarding: (a) => startOnboarding(workflows, dataSource, a.id, a.stage, a.company),
  };
}
