/** Brokerage helpers: fresh names, opening a case as a partner would, moving it as an operator would. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { PartnerClient } from '../../src/client/partner-client';
import { BrokerageCase } from '../../src/db/entities/brokerage-case';
import { caseStateQuery, caseWorkflowId, moveUpdate, type CaseMove, type CaseState } from '../../workflows/brokerage-messages';
import { getStack } from './stack';

export interface CaseBody {
  case_id: string;
  domain: string;
  tier: string;
  status: string;
  buyer_email: string;
  budget_cents: number;
  currency: string;
  price_cents: number | null;
  progress_url: string;
  created_at: string;
  updated_at: string;
  timeline: Array<{ status: string; at: string; detail?: string }>;
  outcome: null | { result: string; price_cents?: number; fee_cents?: number; partner_share_cents?: number; reason?: string; closed_at: string };
}

let names = 0;
/** A name outside every inventory, so eligible in sandbox (no `live-`/`site-` prefix). */
export function brokerableName(prefix = 'wanted'): string {
  return `${prefix}${process.pid}x${++names}${randomBytes(3).toString('hex')}.com`;
}

export async function openCase(client: PartnerClient, body: Partial<{ domain: string; tier: string; buyer_email: string; budget_cents: number }> = {}): Promise<CaseBody> {
  const res = await client.post<CaseBody>('/api/partner/v1/brokerage', { domain: brokerableName(), tier: 'managed', buyer_email: 'buyer@example.com', budget_cents: 500_000, ...body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

export function caseHandle(casePublicId: string) {
  return getStack().env.client.workflow.getHandle(caseWorkflowId(casePublicId));
}

/** The operator's move, as the Temporal UI sends it. */
export async function move(casePublicId: string, m: CaseMove): Promise<CaseState> {
  return caseHandle(casePublicId).executeUpdate(moveUpdate, { args: [m] });
}

export async function moveThrough(casePublicId: string, moves: Array<CaseMove['to'] | CaseMove>): Promise<void> {
  for (const m of moves) await move(casePublicId, typeof m === 'string' ? { to: m } : m);
}

export async function caseState(casePublicId: string): Promise<CaseState> {
  return caseHandle(casePublicId).query(caseStateQuery);
}

export async function caseRow(casePublicId: string): Promise<BrokerageCase> {
  return getStack().dataSource.getRepository(BrokerageCase).findOneByOrFail({ publicId: casePublicId });
}

/** How long a case's row may take to show a timer's move: timers fire after a skip, their activities run in real time. */
export const CASE_ROW_MS = 15_000;
