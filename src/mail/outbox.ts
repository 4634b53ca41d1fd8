/**
 * The emails the service owes (CONTRACT §16): queued in the transaction of the business event
 * they tell of, keyed by that event, so the email exists exactly when the event does and a
 * retried step queues nothing twice. Sending is the `email:<id>` workflow's activity
 * (src/mail/send.ts); a mail server that does not answer delays the email, never the sale.
 */
import type { EntityManager } from 'typeorm';
import { Email } from '../db/entities/email';
import type { EmailKind, EmailData } from './templates';

export interface QueuedEmail<K extends EmailKind> {
  /** The business event, unique: `checkout-receipt:<session>`, `brokerage:<case>:<seq>`… */
  key: string;
  kind: K;
  to: string;
  data: EmailData[K];
  /**
   * A sandbox partner's buyer email (a receipt, a brokerage update): anyone can get a sandbox
   * credential from the public form and name any buyer address, so at most
   * SANDBOX_BUYER_EMAILS_PER_DAY of these go out per partner a day; beyond, they are not queued.
   */
  sandboxPartnerId?: string;
}

export const SANDBOX_BUYER_EMAILS_PER_DAY = 100;

/** Queues the email in `manager`'s transaction; answers its id when queued now, undefined when the event already had it. */
export async function queueEmail<K extends EmailKind>(manager: EntityManager, email: QueuedEmail<K>): Promise<string | undefined> {
  if (email.sandboxPartnerId) {
    const today = await manager
      .getRepository(Email)
      .createQueryBuilder('e')
      .where("e.partner_id = :partnerId AND e.created_at > now() - interval '1 day'", { partnerId: email.sandboxPartnerId })
      .getCount();
    if (today >= SANDBOX_BUYER_EMAILS_PER_DAY) return undefined;
  }
  const result = await manager
    .getRepository(Email)
    .createQueryBuilder()
    .insert()
    .values({ key: email.key, kind: email.kind, recipient: email.to, partnerId: email.sandboxPartnerId ?? null, data: email.data as never })
    .orIgnore()
    .returning(['id'])
    .execute();
  return (result.raw as Array<{ id: string }>)[0]?.id;
}
