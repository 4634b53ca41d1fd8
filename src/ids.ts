import { randomBytes } from 'node:crypto';

/** Random bytes from the system's CSPRNG, drawn ahead in one call for many ids (a call per id showed in the hot path's profile). */
let pool = Buffer.alloc(0);
let offset = 0;

function randomHex(bytes: number): string {
  if (offset + bytes > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  offset += bytes;
  return pool.toString('hex', offset - bytes, offset);
}

/** Public identifiers: a type prefix and 24 hex characters (`ord_…`, `quo_…`, `evt_…`, request ids `req_…`). */
export function publicId(prefix: 'quo' | 'ord' | 'ref' | 'evt' | 'txn' | 'trf' | 'stl' | 'po' | 'cs' | 'rs' | 'lnk' | 'brk' | 'req' | 'dsp'): string {
  return `${prefix}_${randomHex(12)}`;
}

/** A UUID version 4 (nonces, idempotency keys), any case. */
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** Any UUID (row ids inside cursors). */
export const UUID_ANY = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
