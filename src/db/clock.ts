import type { EntityManager } from 'typeorm';

/**
 * The database's clock: what money and windows are measured by when no workflow's clock is at
 * hand (an API host's clock may drift; every host shares this one). Raw SQL: a Postgres function
 * read on no table.
 */
export async function databaseNow(manager: EntityManager): Promise<Date> {
  const [row] = (await manager.query('SELECT now() AS now')) as Array<{ now: Date }>;
  return new Date(row.now);
}
