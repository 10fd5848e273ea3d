import type { Compilable } from 'kysely';
import type { Db } from '../../src/db/database.js';
import { isPostgres } from '../../src/db/dialect.js';

/**
 * The database's own plan of a query, one line per step: EXPLAIN QUERY PLAN on SQLite, EXPLAIN on
 * PostgreSQL. The query-plan tests of each group assert indexes on it.
 */
export async function queryPlan(db: Db, query: Compilable<unknown>): Promise<string> {
  const compiled = query.compile();
  const prefix = isPostgres(db) ? 'explain ' : 'explain query plan ';
  const result = await db.executeQuery<Record<string, unknown>>({
    ...compiled,
    sql: prefix + compiled.sql,
  });
  return result.rows.map((row) => String(row.detail ?? row['QUERY PLAN'])).join('\n');
}
