import { SqliteDialect, SqliteQueryCompiler, type QueryCompiler } from 'kysely';

/**
 * Kysely's SQLite dialect, except that every bound value is written `+?` instead of `?`, so
 * SQLite plans each statement once, when it is prepared.
 *
 * Why: while planning, SQLite peeks at some bound values (an `= ?` it filters on, `LIMIT ?`, a
 * `LIKE ?`, a value `sqlite_stat4` has samples for) and marks the statement to be planned again
 * when they change. better-sqlite3 clears the bindings after every run, which counts as a change,
 * so such a statement was parsed and planned again on every run: a join of two tables took 6 µs
 * instead of 1, a directory page or a chat send a third more CPU (measured; bench/README.md has
 * the figures). SQLite does not peek through the unary plus, a no-op on any
 * value that keeps the plain `?`'s lack of affinity and leaves index use as it was (the plan
 * tests check it). PostgreSQL plans its prepared statements its own way (database.ts).
 */
export class PlannedOnceSqliteDialect extends SqliteDialect {
  override createQueryCompiler(): QueryCompiler {
    return new PlannedOnceSqliteCompiler();
  }
}

class PlannedOnceSqliteCompiler extends SqliteQueryCompiler {
  protected override getCurrentParameterPlaceholder(): string {
    return '+?';
  }
}
