/** The brokerage buyer's emails (CONTRACT §16): the case's opening and each status change, with the progress link. */
import type { EntityManager } from 'typeorm';
import type { BrokerageCase } from '../db/entities/brokerage-case';
import { queueEmail } from '../mail/outbox';

/** One email per move of the case (the same key as its event). */
export const caseEmailKey = (caseId: string, seq: number) => `brokerage:${caseId}:${seq}`;

export async function queueCaseEmail(tx: EntityManager, c: Pick<BrokerageCase, 'id' | 'publicId' | 'domain' | 'status' | 'buyerEmail' | 'environment' | 'partnerId'>, seq: number): Promise<void> {
  await queueEmail(tx, {
    key: caseEmailKey(c.id, seq),
    kind: 'brokerage_update',
    to: c.buyerEmail,
    data: { casePublicId: c.publicId, domain: c.domain, status: c.status, seq, sandbox: c.environment === 'sandbox' },
    ...(c.environment === 'sandbox' ? { sandboxPartnerId: c.partnerId } : {}),
  });
}
