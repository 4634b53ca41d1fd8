/**
 * One delivery attempt: POST the event, signed, to the partner's endpoint. The host name is
 * resolved here and every address is checked against the URL policy before connecting, and the
 * connection goes to the address that was checked (no second lookup a DNS rebind could change).
 * 2xx is success; anything else, a refused connection or no answer within 10 s is a failure.
 */
import http from 'node:http';
import https from 'node:https';
import { lookup as dnsLookup } from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { webhookHeaders } from '../client/webhooks';
import type { EventView } from './events';
import { forbiddenAddress, type TargetPolicy } from './url-policy';

export const DELIVERY_TIMEOUT_MS = 10_000;

export interface AttemptResult {
  ok: boolean;
  status?: number;
  error?: string;
  /** No enabled endpoint to deliver to (it was disabled, by giving up on an earlier event): no retry can succeed. */
  disabled?: true;
}

function guardedLookup(policy: TargetPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as Array<{ address: string; family: number }>;
      const refused = list.map((a) => forbiddenAddress(a.address, policy)).find(Boolean);
      if (refused) return callback(Object.assign(new Error(`refused: ${hostname} resolves to ${refused}`), { code: 'EFORBIDDENADDRESS' }), '', 0);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
}

/** A connection error as one line; a connect over several addresses fails with an AggregateError. */
function describeError(err: NodeJS.ErrnoException & { errors?: NodeJS.ErrnoException[] }): string {
  const first = err.errors?.[0];
  const code = err.code ?? first?.code;
  const message = err.message || first?.message || 'connection failed';
  return code ? `${code}: ${message}` : message;
}

/**
 * One POST of the event. `signal` cuts it short (the worker shutting down past its grace period,
 * or the delivery cancelled): the attempt then fails at once instead of waiting out its 10 s.
 * `timeoutMs` is the spec's 10 s (DELIVERY_TIMEOUT_MS) unless a test asks for less.
 */
export function postEvent(url: string, secrets: string | readonly string[], event: EventView, policy: TargetPolicy, signal?: AbortSignal, timeoutMs = DELIVERY_TIMEOUT_MS): Promise<AttemptResult> {
  const body = JSON.stringify(event);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const target = new URL(url);
  const literal = target.hostname.replace(/^\[|\]$/g, '');
  // IP literals never reach the lookup hook, so they are checked here.
  const literalRefused = ipaddr.isValid(literal) ? forbiddenAddress(literal, policy) : undefined;
  if (literalRefused) return Promise.resolve({ ok: false, error: `EFORBIDDENADDRESS: refused: ${literalRefused}` });
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const req = client.request(
      target,
      {
        method: 'POST',
        // A fresh connection per attempt: a pooled socket the receiver closed would fail it spuriously.
        agent: false,
        lookup: guardedLookup(policy),
        timeout: timeoutMs,
        signal,
        headers: {
          ...webhookHeaders(secrets, event.id, timestamp, body),
          'Content-Length': Buffer.byteLength(body),
          'User-Agent': 'domain-partner-api-webhooks/1',
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          clearTimeout(overall);
          const status = res.statusCode ?? 0;
          resolve(status >= 200 && status < 300 ? { ok: true, status } : { ok: false, status, error: `HTTP ${status}` });
        });
      },
    );
    // No answer (headers and body) within 10 s in all is a failure, however slowly bytes trickle.
    const overall = setTimeout(() => req.destroy(Object.assign(new Error(`no answer within ${timeoutMs / 1000} s`), { code: 'ETIMEDOUT' })), timeoutMs);
    req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer within ${timeoutMs / 1000} s`), { code: 'ETIMEDOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(overall);
      resolve({ ok: false, error: describeError(err) });
    });
    req.end(body);
  });
}
