import assert from 'node:assert/strict';
import { checkoutWorkflowId } from '../../workflows/messages';
import { recordHistory } from '../helpers/histories';
import { getStack, newPartner, ownTemporal } from '../helpers/stack';
import { buy, freshDomain, quote } from '../helpers/orders';

type SessionBody = { session_id: string; checkout_url: string; domain: string; price_cents: number; currency: string; status: string; expires_at: string; order_id: string | null; client_reference_id: string | null };
const code = (body: unknown) => (body as { error: { code: string } }).error.code;

describe('checkout sessions (CONTRACT §9, scope embed)', () => {
  ownTemporal();
  it('POST /checkout-session answers 201 with an open session, a checkout_url carrying a signed pt, and expires_at 7 days on; it reserves nothing', async () => {
    const { client } = await newPartner();
    const domain = await freshDomain();
    const before = Date.now();
    const res = await client.post<SessionBody>('/api/partner/v1/checkout-session', { domain: domain.name.toUpperCase(), success_url: 'https://partner.example/thanks', client_reference_id: 'cart-42', customer_email: 'jane@example.com' });
    const after = Date.now();
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.session_id, /^cs_[0-9a-f]{24}$/);
    assert.equal(res.body.domain, domain.name);
    assert.equal(res.body.price_cents, domain.price);
    assert.equal(res.body.currency, 'USD');
    assert.equal(res.body.status, 'open');
    const url = new URL(res.body.checkout_url);
    assert.equal(url.pathname, '/checkout');
    assert.ok(url.searchParams.get('pt')?.startsWith(`${res.body.session_id}.`));
    // 7 days from the moment the session was opened, between the request's start and its answer
    // (however long a busy machine took), give or take the second expires_at is written in.
    const expiresAt = Date.parse(res.body.expires_at);
    assert.ok(expiresAt >= before + 7 * 86_400_000 - 1_000 && expiresAt <= after + 7 * 86_400_000 + 1_000, `expires ${expiresAt - before} ms after the request was sent`);
    assert.equal((await client.get<{ available: boolean }>(`/api/partner/v1/availability?domain=${domain.name}`)).body.available, true, 'opening a session reserves nothing');

    const got = await client.get<SessionBody>(`/api/partner/v1/checkout-session/${res.body.session_id}`);
    assert.equal(got.status, 200);
    assert.deepEqual({ ...got.body, checkout_url: undefined }, { ...res.body, checkout_url: undefined });
    assert.equal(got.body.client_reference_id, 'cart-42');
    const described = await getStack().env.client.workflow.getHandle(checkoutWorkflowId(res.body.session_id)).describe();
    assert.equal(described.status.name, 'RUNNING', 'its 7-day workflow runs');
  });

  it('every error: bad body 400, unlisted 404, reserved or sold 409, another partner\'s session 404, without embed 403', async () => {
    const { client } = await newPartner();
    const post = (body: unknown) => client.post('/api/partner/v1/checkout-session', body);
    for (const body of [{}, { domain: 'not a domain' }, { domain: 'x.com', success_url: 'javascript:alert(1)' }, { domain: 'x.com', cancel_url: 'https://u:p@partner.example/' }, { domain: 'x.com', customer_email: 'nope' }, { domain: 'x.com', client_reference_id: '' }]) {
      const res = await post(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(code(res.body), 'validation_error');
    }
    const unlisted = await post({ domain: 'no-such-name-anywhere.com' });
    assert.deepEqual([unlisted.status, code(unlisted.body)], [404, 'not_found']);

    const other = await newPartner();
    const reservedName = (await freshDomain()).name;
    assert.equal((await quote(other.client, reservedName)).status, 201);
    const reserved = await post({ domain: reservedName });
    assert.deepEqual([reserved.status, code(reserved.body)], [409, 'conflict']);
    const sold = await buy(other.client, 'pay_stall_transfer_sold');
    const soldRes = await post({ domain: sold.domain });
    assert.deepEqual([soldRes.status, code(soldRes.body)], [409, 'conflict']);

    const theirs = await other.client.post<SessionBody>('/api/partner/v1/checkout-session', { domain: (await freshDomain()).name });
    assert.equal((await client.get(`/api/partner/v1/checkout-session/${theirs.body.session_id}`)).status, 404);
    assert.equal((await client.get('/api/partner/v1/checkout-session/cs_000000000000000000000000')).status, 404);

    const noEmbed = await newPartner({ scopes: ['search', 'buy'] });
    const forbidden = await noEmbed.client.post('/api/partner/v1/checkout-session', { domain: (await freshDomain()).name });
    assert.deepEqual([forbidden.status, code(forbidden.body)], [403, 'forbidden']);
    assert.equal((await other.client.post('/api/partner/v1/refunds', { order_id: sold.public_id })).status, 201);
  });

  it('a live session needs https return URLs', async () => {
    const { client } = await newPartner({ environment: 'live' });
    const res = await client.post('/api/partner/v1/checkout-session', { domain: 'whatever.com', success_url: 'http://partner.example/thanks' });
    assert.equal(res.status, 400);
  });

  it('the session expires when its 7 days pass (time skipped on its workflow)', async () => {
    const { client } = await newPartner();
    const res = await client.post<SessionBody>('/api/partner/v1/checkout-session', { domain: (await freshDomain()).name });
    const handle = getStack().env.client.workflow.getHandle(checkoutWorkflowId(res.body.session_id));
    assert.equal(await handle.result(), 'expired');
    assert.equal((await client.get<SessionBody>(`/api/partner/v1/checkout-session/${res.body.session_id}`)).body.status, 'expired');
    await recordHistory(checkoutWorkflowId(res.body.session_id), 'checkout-expired');
  });
});
