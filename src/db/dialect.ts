import { PostgresAdapter, sql } from 'kysely';

/** Where SQL must differ between the two databases (DDL, locking), the code asks this. */
export function isPostgres(db: { getExecutor(): { readonly adapter: unknown } }): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * A write refused by a UNIQUE or PRIMARY KEY constraint: the loser of two concurrent claims on
 * one key. better-sqlite3 reports `SQLITE_CONSTRAINT_UNIQUE`/`_PRIMARYKEY`, pg SQLSTATE `23505`.
 */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    code === '23505' ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

/** A write naming a row that is gone (e.g. a follow of a profile deleted a moment ago). */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/** A bound value as the column's type: PostgreSQL types a bare parameter in a select list as text. */
export const typed = (value: unknown, type: 'text' | 'integer' | 'bigint') =>
  sql`cast(${value} as ${sql.raw(type)})`;
