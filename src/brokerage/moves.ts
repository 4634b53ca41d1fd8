/**
 * Case status changes made by the case workflow's activities (the workflow decides; these write).
 * Each is one transaction: the case row (locked), its timeline entry with the workflow's time,
 * its `brokerage.*` event and, on `completed`, the deal's transaction and ledger posting. A move
 * carries its sequence number in the case's history, so a retried activity applies it once.
 */
import type { DataSource } from 'typeorm';
import type { Environment } from '../config';
import { BrokerageCase, BrokerageTimelineEntry } from '../db/entities/brokerage-case';
import { appendEvent, BROKERAGE_EVENT } from '../events/outbox';
import { caseEmailKey, queueCaseEmail } from './case-email';
import { bookBrokerageDeal } from '../finance/sales';
import { commissionCents } from '../money';
import type { CaseStatus } from '../../workflows/brokerage-messages';
import { caseEventData } from './cases';
import { ROW_LOCK } from '../db/row-lock';

export interface CaseMoveInput {
  caseId: string;
  /** The move's place in the case's history (the `requested` entry is 1). */
  seq: number;
  from: CaseStatus;
  to: CaseStatus;
  at: string;
  priceCents: number | null;
  reason: string | null;
  by: 'operator' | 'timer';
}

export type CaseMoveResult = { status: CaseStatus; priceCents: number | null; applied: boolean; event: { partnerId: string; environment: Environment }; emailKey?: string } | 'absent';

async function lockCase(tx: import('typeorm').EntityManager, caseId: string): Promise<BrokerageCase | null> {
  return tx.getRepository(BrokerageCase).createQueryBuilder('c').setLock(ROW_LOCK).where('c.id = :caseId', { caseId }).getOne();
}

export async function applyCaseMove(dataSource: DataSource, input: CaseMoveInput): Promise<CaseMoveResult> {
  return dataSource.transaction(async (tx) => {
    const c = await lockCase(tx, input.caseId);
    if (!c) return 'absent';
    const event = { partnerId: c.partnerId, environment: c.environment };
    if (c.moves >= input.seq) return { status: c.status, priceCents: c.priceCents, applied: false, event };
    if (c.moves !== input.seq - 1 || c.status !== input.from) {
      throw new Error(`case ${c.publicId} is ${c.status} after ${c.moves} moves; the workflow expected ${input.from} after ${input.seq - 1}`);
    }
    const at = new Date(input.at);
    const changes: Partial<BrokerageCase> = { status: input.to, moves: input.seq, updatedAt: at };
    if (input.to === 'agreed') changes.priceCents = input.priceCents;
    if (input.to === 'negotiating') changes.priceCents = null; // the deal fell through: no price any more
    if (input.to === 'completed') {
      const price = c.priceCents!;
      const fee = commissionCents(price, c.feeBps);
      Object.assign(changes, { feeCents: fee, partnerShareCents: commissionCents(fee, c.partnerShareBps), closedAt: at });
    }
    if (input.to === 'closed') Object.assign(changes, { closedAt: at, closeReason: input.reason ?? 'closed by the service' });
    await tx.getRepository(BrokerageCase).update({ id: c.id }, changes);
    const moved = Object.assign(c, changes);
    await tx.getRepository(BrokerageTimelineEntry).insert({ caseId: c.id, seq: input.seq, status: input.to, at, detail: input.reason });
    if (input.to === 'completed') {
      await bookBrokerageDeal(tx, moved, { priceCents: moved.priceCents!, feeCents: moved.feeCents!, partnerShareCents: moved.partnerShareCents! }, at);
    }
    await appendEvent(tx, { partnerId: c.partnerId, environment: c.environment, type: BROKERAGE_EVENT[input.to], data: caseEventData(moved, at, input.reason), dedupeKey: `brokerage:${c.id}:${input.seq}` });
    await queueCaseEmail(tx, moved, input.seq);
    return { status: moved.status, priceCents: moved.priceCents, applied: true, event, emailKey: caseEmailKey(c.id, input.seq) };
  });
}

/** The `followUp`-th follow-up of an owner who has not answered; counted on the case once. */
export async function recordFollowUp(dataSource: DataSource, caseId: string, followUp: number): Promise<BrokerageCase | null> {
  await dataSource.getRepository(BrokerageCase).createQueryBuilder().update().set({ followUpsSent: followUp }).where('id = :caseId AND follow_ups_sent < :followUp', { caseId, followUp }).execute();
  return dataSource.getRepository(BrokerageCase).findOneBy({ id: caseId });
}

/** Revokes the case's progress link: every link given out so far stops working; the case answers a new one. */
export async function revokeProgressLink(dataSource: DataSource, casePublicId: string): Promise<BrokerageCase | null> {
  return dataSource.transaction(async (tx) => {
    const c = await tx.getRepository(BrokerageCase).createQueryBuilder('c').setLock(ROW_LOCK).where('c.public_id = :casePublicId', { casePublicId }).getOne();
    if (!c) return null;
    await tx.getRepository(BrokerageCase).update({ id: c.id }, { linkVersion: c.linkVersion + 1 });
    return Object.assign(c, { linkVersion: c.linkVersion + 1 });
  });
}
