import type { CompiledQuery, Compilable, Kysely } from 'kysely';
import type { Database } from './tables.js';

type Executor = Kysely<Database>;

/**
 * A query built and compiled once per database, then run with new parameters. For the lookups on
 * every authenticated request, Kysely's immutable builder costs more than SQLite's own work.
 * `build` must use each parameter exactly once, in order; the first run checks that it does.
 */
export function reusableQuery<Row, Params extends unknown[]>(
  build: (db: Executor, ...params: Params) => Compilable<Row>,
) {
  const compiled = new WeakMap<Executor, CompiledQuery<Row>>();
  return async function run(db: Executor, ...params: Params): Promise<Row[]> {
    let query = compiled.get(db);
    if (query === undefined) {
      query = build(db, ...params).compile();
      const sameOrder =
        query.parameters.length === params.length &&
        query.parameters.every((p, i) => p === params[i]);
      if (!sameOrder)
        throw new Error('reusableQuery: build must use each parameter once, in order');
      compiled.set(db, query);
    }
    const result = await db.executeQuery<Row>({ ...query, parameters: params });
    return result.rows;
  };
}
