import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import type { PartnerClient } from '../../src/client/partner-client';
import { orderWorkflowId, quoteWorkflowId } from '../../workflows/messages';
import { getStack } from './stack';

export interface ListedDomain {
  name: string;
  price: number;
}

/** Names the search tests look up by name: never sold by the helpers below. */
export const SEARCH_TEST_NAMES = ['evnorth.com', 'wildshore.net', 'policysatoshi.shop', 'vetbold.ai'];

/** Names the discovery, auth and admission tests read as listed and available: never sold by another test. */
const READ_TEST_NAMES = ['academy.com'];

/** A sandbox name nobody has touched yet (each call takes a different one). */
export async function freshDomain(): Promise<ListedDomain> {
  return (await freshDomains(1))[0]!;
}

/** `count` different fresh names at once (separate freshDomain calls may pick one name twice). */
export async function freshDomains(count: number): Promise<ListedDomain[]> {
  const rows = (await getStack().dataSource.query(
    `SELECT name, buy_now_price_cents FROM domains d
     WHERE environment = 'sandbox' AND status = 'listed' AND NOT EXISTS (SELECT 1 FROM quotes q WHERE q.domain_id = d.id)
       AND NOT EXISTS (SELECT 1 FROM checkout_sessions c WHERE c.domain_id = d.id)
       AND name <> ALL($1)
     ORDER BY random() LIMIT $2`,
    [[...SEARCH_TEST_NAMES, ...READ_TEST_NAMES], count],
  )) as Array<{ name: string; buy_now_price_cents: string }>;
  return rows.map((row) => ({ name: row.name, price: Number(row.buy_now_price_cents) }));
}

export interface QuoteBody {
  quote_id: string;
  domain: string;
  price_cents: number;
  currency: string;
  expires_at: string;
  quote_token: string;
}

export interface OrderBody {
  public_id: string;
  status: string;
  domain: string;
  sale_price_cents: number;
  currency: string;
  external_payment_ref: string;
  payment_model: string;
  created_at: string;
  failure_reason: string | null;
  timeline: Array<{ status: string; at: string; detail?: string }>;
}

export async function quote(client: PartnerClient, domain: string) {
  return client.post<QuoteBody>('/api/partner/v1/quotes', { domain });
}

export async function order(client: PartnerClient, body: { quote_id: string; external_payment_ref: string; sale_price_cents: number }, key: string = randomUUID()) {
  return client.post<OrderBody>('/api/partner/v1/orders', body, { headers: { 'Idempotency-Key': key } });
}

/** Quote then order a fresh domain; returns the order body. */
export async function buy(client: PartnerClient, externalPaymentRef = `pay_${randomUUID()}`): Promise<OrderBody> {
  const domain = await freshDomain();
  const q = await quote(client, domain.name);
  if (q.status !== 201) throw new Error(`quote failed: ${q.text}`);
  const o = await order(client, { quote_id: q.body.quote_id, external_payment_ref: externalPaymentRef, sale_price_cents: q.body.price_cents });
  if (o.status !== 201) throw new Error(`order failed: ${o.text}`);
  return o.body;
}

/** Waits for the order's fulfilment workflow to end (time skips meanwhile); returns its result. */
export async function fulfilmentResult(orderPublicId: string): Promise<{ status: string; reason?: string }> {
  return getStack().env.client.workflow.getHandle(orderWorkflowId(orderPublicId)).result();
}

/**
 * The order's fulfilment, waited for with the clock moved in steps (env.sleep) instead of by
 * waiting on result(): while a client waits on a result and an activity runs, the time-skipping
 * server jumps to the furthest timer it knows of (seen: ten years a step), so a test that reads
 * dates or months of several sales keeps the clock this way.
 */
export async function fulfilmentStepwise(orderPublicId: string): Promise<{ status: string; reason?: string }> {
  const { env } = getStack();
  const handle = new Client({ connection: env.connection }).workflow.getHandle(orderWorkflowId(orderPublicId));
  for (let step = 0; step < 600; step++) {
    if ((await handle.describe()).status.name !== 'RUNNING') return handle.result();
    await env.sleep('5 seconds');
  }
  throw new Error(`order ${orderPublicId} did not end within 50 minutes of workflow time`);
}

export async function quoteResult(quotePublicId: string): Promise<string> {
  return getStack().env.client.workflow.getHandle(quoteWorkflowId(quotePublicId)).result();
}

export async function count(sql: string, params: unknown[]): Promise<number> {
  const [row] = (await getStack().dataSource.query(`SELECT count(*)::int AS n FROM (${sql}) x`, params)) as Array<{ n: number }>;
  return row.n;
}
