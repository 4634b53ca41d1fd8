import { randomBytes } from 'node:crypto';

/** Public identifiers: a type prefix and 24 hex characters (`ord_…`, `quo_…`, `evt_…`). */
export function publicId(prefix: 'quo' | 'ord' | 'ref' | 'evt' | 'txn' | 'trf'): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}
