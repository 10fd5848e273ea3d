import type { CompiledQuery, Compilable, DialectAdapter, Kysely } from 'kysely';
import type { Database } from './tables.js';

type Executor = Kysely<Database>;

/**
 * The SQL texts of every reusable query compiled so far: a small, fixed set, which PostgreSQL
 * then keeps prepared on each connection (database.ts), so it plans each of them once.
 */
const reusedTexts = new Set<string>();

export const isReusedText = (sql: string): boolean => reusedTexts.has(sql);

/**
 * A query built and compiled once per database, then run with new parameters. For the lookups on
 * every authenticated request, Kysely's immutable builder costs more than SQLite's own work.
 * `build` must use each parameter exactly once, in order; the first run checks that it does.
 */
export function reusableQuery<Row, Params extends unknown[]>(
  build: (db: Executor, ...params: Params) => Compilable<Row>,
) {
  const run = reusableShapedQuery(build);
  return (db: Executor, ...params: Params): Promise<Row[]> => run(db, '', params, ...params);
}

/**
 * The same for a query whose SQL text depends on a few choices (its shape: a sort, an optional
 * filter): compiled once per shape and database. `parameters` are the values `build(db, ...args)`
 * binds, in the order it binds them; the first run of each shape checks that they are.
 *
 * "Per database" is per Kysely instance opened, which its transactions and `withPlugin` copies
 * share (they all hold its dialect adapter): a write that runs inside a transaction is compiled
 * once too, not once per transaction.
 */
export function reusableShapedQuery<Row, Args extends unknown[]>(
  build: (db: Executor, ...args: Args) => Compilable<Row>,
) {
  const compiled = new WeakMap<DialectAdapter, Map<string, CompiledQuery<Row>>>();
  return async function run(
    db: Executor,
    shape: string,
    parameters: readonly unknown[],
    ...args: Args
  ): Promise<Row[]> {
    const database = db.getExecutor().adapter;
    let shapes = compiled.get(database);
    if (shapes === undefined) compiled.set(database, (shapes = new Map()));
    let query = shapes.get(shape);
    if (query === undefined) {
      query = build(db, ...args).compile();
      const sameOrder =
        query.parameters.length === parameters.length &&
        query.parameters.every((p, i) => p === parameters[i]);
      if (!sameOrder) throw new Error('reusable query: parameters differ from what build binds');
      shapes.set(shape, query);
      reusedTexts.add(query.sql);
    }
    const result = await db.executeQuery<Row>({ ...query, parameters });
    return result.rows;
  };
}
