import type { ColumnOptions } from 'typeorm';

/**
 * Money is bigint in Postgres; pg hands bigint back as a string. Amounts stay far below 2^53,
 * so they are numbers in code, checked on the way in.
 */
export const centsColumn: ColumnOptions = {
  type: 'bigint',
  transformer: {
    to: (value: number | null | undefined) => value,
    from: (value: string | null) => {
      if (value === null) return null;
      const n = Number(value);
      if (!Number.isSafeInteger(n)) throw new Error(`amount out of range: ${value}`);
      return n;
    },
  },
};
