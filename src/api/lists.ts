/** List parameters shared by every list endpoint (CONTRACT §4) and date-range parsing (§3). */
import { z } from './schemas';

export const Limit = z
  // Digits only: `1e1`, `0x10` and ` 5` are numbers to JavaScript, not page sizes to a partner.
  .preprocess(
    (v) => (typeof v === 'string' && !/^[0-9]{1,6}$/.test(v) ? Number.NaN : v),
    z.coerce.number('must be a whole number between 1 and 100').int('must be a whole number between 1 and 100').min(1, 'must be between 1 and 100').max(100, 'must be between 1 and 100'),
  )
  .default(20)
  .openapi({ description: 'page size, 1–100 (default 20)', type: 'integer' });

export const Cursor = z.string().min(1).max(500).optional().openapi({ description: 'opaque cursor from the previous page' });

/** Opaque keyset cursors: base64url JSON of the last row's sort key. */
export function encodeCursor(value: Record<string, string>): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeCursor<T extends Record<string, string>>(cursor: string, keys: readonly (keyof T)[]): T | undefined {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as T;
    return keys.every((k) => typeof value[k] === 'string') ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether the date (and time, if any) at the start of `s` names a real instant: JavaScript's
 * Date.parse rolls `2026-02-30` over to 2 March and takes 24:00, where Postgres refuses both.
 */
export function isCalendarDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2}))?/i.exec(s);
  if (!m) return false;
  const [year, month, day, hour = 0, minute = 0, second = 0] = m.slice(1).map((v) => (v === undefined ? undefined : Number(v))) as number[];
  const date = new Date(Date.UTC(year, month - 1, day));
  return year >= 1 && date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day && hour <= 23 && minute <= 59 && second <= 59;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * An RFC 3339 date or date-time. As the lower bound a date means its first instant (UTC); as the
 * upper bound it means the whole day, so `to=2026-11-21` includes all of that day.
 */
export function DateBound(edge: 'from' | 'to') {
  return z
    .string()
    .refine((s) => (DATE_ONLY.test(s) || DATE_TIME.test(s)) && isCalendarDate(s) && !Number.isNaN(Date.parse(DATE_ONLY.test(s) ? `${s}T00:00:00Z` : s)), 'must be an RFC 3339 date or date-time')
    .transform((s) => {
      // Bounds are inclusive (CONTRACT §3) and callers compare `< to`: a date-time `to` is moved
      // just past itself (to the next millisecond, a JavaScript Date's precision).
      if (!DATE_ONLY.test(s)) return edge === 'from' ? new Date(s) : new Date(new Date(s).getTime() + 1);
      const start = new Date(`${s}T00:00:00Z`);
      return edge === 'from' ? start : new Date(start.getTime() + 24 * 60 * 60 * 1000);
    })
    .optional()
    .openapi({ description: `RFC 3339 date or date-time (UTC); a date as \`${edge}\` covers ${edge === 'from' ? 'from the start of' : 'to the end of'} that day`, type: 'string' });
}

/** The time in a keyset cursor, exactly as the API writes it (Postgres' microseconds, UTC). */
const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export function isCursorTime(value: string): boolean {
  return CURSOR_TIME.test(value) && isCalendarDate(value) && !Number.isNaN(Date.parse(value));
}
