/**
 * TypeORM's Postgres driver answers UPDATE and DELETE with `[rows, affectedCount]` rather than
 * the rows alone; these two helpers keep that quirk in one place.
 */
interface Queryable {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/** The rows an `UPDATE … RETURNING` or `DELETE … RETURNING` statement returned. */
export async function modifiedRows<T>(db: Queryable, sql: string, params: unknown[]): Promise<T[]> {
  const [rows] = (await db.query(sql, params)) as [T[], number];
  return rows;
}

/** How many rows an UPDATE or DELETE statement touched. */
export async function affectedCount(db: Queryable, sql: string, params: unknown[]): Promise<number> {
  const [, count] = (await db.query(sql, params)) as [unknown, number];
  return count;
}
