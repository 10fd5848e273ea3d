import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from './database.js';

/**
 * PostgreSQL's answers that say "two transactions crossed; run yours again": a deadlock one of them
 * lost (40P01), or a serialization failure (40001). Neither is the request's fault.
 */
const CONFLICT_CODES = new Set(['40P01', '40001']);
const ATTEMPTS = 3;

export function isTransientConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CONFLICT_CODES.has(code);
}

/**
 * Runs `attempt`, and again (up to three times in all, after a few random milliseconds) when
 * PostgreSQL rolled it back for crossing another transaction. `afterFailure` runs after every
 * attempt that failed, to undo what else it did.
 */
export async function retryingConflicts<T>(
  attempt: () => Promise<T>,
  afterFailure?: () => Promise<void>,
): Promise<T> {
  for (let attempts = 1; ; attempts += 1) {
    try {
      return await attempt();
    } catch (error) {
      await afterFailure?.();
      if (attempts >= ATTEMPTS || !isTransientConflict(error)) throw error;
      await sleep(Math.random() * 10 * attempts);
    }
  }
}

/**
 * Runs `work` in a transaction, again when PostgreSQL rolled it back for crossing another one
 * (`retryingConflicts`). `work` must only touch the database, or undo what else it did in
 * `afterRollback`, which runs after every attempt that did not commit. Events go out after this
 * returns.
 */
export function inTransaction<T>(
  db: Db,
  work: (trx: Db) => Promise<T>,
  afterRollback?: () => Promise<void>,
): Promise<T> {
  return retryingConflicts(() => db.transaction().execute(work), afterRollback);
}
