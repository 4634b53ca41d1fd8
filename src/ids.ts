import { randomBytes } from 'node:crypto';

/** Public identifiers: a type prefix and 24 hex characters (`ord_…`, `quo_…`, `evt_…`). */
export function publicId(prefix: 'quo' | 'ord' | 'ref' | 'evt' | 'txn' | 'trf' | 'stl' | 'po' | 'cs' | 'rs' | 'lnk' | 'brk'): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** A UUID version 4 (nonces, idempotency keys), any case. */
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** Any UUID (row ids inside cursors). */
export const UUID_ANY = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
