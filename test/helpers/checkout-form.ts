/** A hosted checkout's form as a browser-like client fills it: the page fetched, its cookie and CSRF token kept. */
import assert from 'node:assert/strict';

export const BROWSER = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36' };

/**
 * Opens the checkout page of `checkoutUrl` (on `baseUrl` when given: another app than the one that
 * made the link) with `headers`, and answers its HTML and `pay(card)`, which posts the form.
 * `cookie`: cookies the browser already holds (a "Buy now" page's).
 */
export async function openCheckoutForm(
  checkoutUrl: string,
  options: { baseUrl?: string; headers?: Record<string, string>; cookie?: string; buyer?: { name: string; email: string } } = {},
): Promise<{ html: string; pay(card: string): Promise<Response> }> {
  const link = new URL(checkoutUrl);
  const origin = options.baseUrl ?? link.origin;
  const headers = options.headers ?? BROWSER;
  const page = await fetch(new URL(link.pathname + link.search, origin), { headers: { ...headers, ...(options.cookie ? { cookie: options.cookie } : {}) } });
  assert.equal(page.status, 200);
  const cookie = [options.cookie, ...page.headers.getSetCookie().map((c) => c.split(';')[0])].filter(Boolean).join('; ');
  const html = await page.text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(html)![1];
  const buyer = options.buyer ?? { name: 'Jane Buyer', email: 'jane@example.com' };
  const pay = (card: string) =>
    fetch(new URL('/checkout', origin), {
      method: 'POST',
      redirect: 'manual',
      headers: { ...headers, cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ pt: link.searchParams.get('pt')!, _csrf: csrf, name: buyer.name, email: buyer.email, card_number: card, expiry: '12/34', cvc: '123' }),
    });
  return { html, pay };
}
