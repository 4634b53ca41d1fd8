import type { ColumnOptions } from 'typeorm';

/**
 * Money is bigint in Postgres; pg hands bigint back as a string. Amounts stay far below 2^53,
 * so they are numbers in code, checked on the way in.
 */
/** A bigint amount as pg hands it back (a string), as a number of cents. */
export function centsFromDb(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`amount out of range: ${value}`);
  return n;
}

export const centsColumn: ColumnOptions = {
  type: 'bigint',
  transformer: {
    to: (value: number | null | undefined) => value,
    from: (value: string | null) => (value === null ? null : centsFromDb(value)),
  },
};
