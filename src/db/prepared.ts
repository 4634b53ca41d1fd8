/**
 * Named prepared statements on the data source's own pg pool, for the few statements every
 * signed request runs. Postgres plans a named statement once per connection and pg sends only
 * its name and parameters afterwards; TypeORM's `query()` sends and plans the text each time and
 * adds a query runner per call, which the profile of the signed hot path showed as its largest
 * single cost (bench/RESULTS.md).
 */
import type { Pool, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

export interface PreparedStatement {
  /** Unique per statement text: pg prepares it once per connection under this name. */
  name: string;
  text: string;
}

function poolOf(dataSource: DataSource): Pool {
  if (!(dataSource.driver instanceof PostgresDriver)) throw new Error('prepared statements need the Postgres driver');
  return dataSource.driver.master as Pool;
}

export async function runPrepared<T extends QueryResultRow>(dataSource: DataSource, statement: PreparedStatement, values: unknown[]): Promise<T[]> {
  const result = await poolOf(dataSource).query<T>({ name: statement.name, text: statement.text, values });
  return result.rows;
}
