import { createHash } from 'node:crypto';
import type { Pool, PoolClient, QueryResult } from 'pg';
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import { isReusedText } from './reusable-query.js';

/**
 * The pool as Kysely sees it, with two differences from handing it `pg`'s pool directly.
 *
 * The reusable queries (reusable-query.ts) run as named prepared statements: PostgreSQL parses and
 * plans each once per connection instead of on every run (planning was half of its work for a
 * directory page, 0.1 ms of a session lookup). Every other query stays unnamed. Behind PgBouncer
 * this needs transaction mode with `max_prepared_statements` set (PgBouncer 1.21 or newer).
 *
 * Each result's rows come in an array of their own (see `detachedRows`).
 */
export function kyselyPool(pool: Pool): PostgresPool {
  // One wrapper per pooled client, made once: Kysely keys its connection objects by the client it
  // is given, so a new wrapper on every checkout would also make it a new connection every time.
  const wrappers = new WeakMap<PoolClient, PostgresPoolClient>();
  const wrap = (client: PoolClient): PostgresPoolClient => {
    let wrapper = wrappers.get(client);
    if (wrapper === undefined) {
      // Why this connection must not serve another request, once that is so (pg's pool closes a
      // client released with an error).
      let unsure: Error | undefined;
      const query = (text: string, values: unknown[]) =>
        runQuery(client, text, values, (reason) => (unsure ??= reason));
      // pg's and Kysely's declarations of query() differ in their overloads only.
      wrapper = {
        query: query as unknown as PostgresPoolClient['query'],
        release: () => client.release(unsure),
      };
      wrappers.set(client, wrapper);
    }
    return wrapper;
  };
  return { connect: async () => wrap(await pool.connect()), end: () => pool.end() };
}

/**
 * Kysely passes SQL text and values (or a cursor, which it never does here: no streaming).
 * `unsure` hears of a failure after which nobody knows the connection's state:
 * - pg's `query_timeout` gave up waiting, but the statement may still run on the server, and a
 *   ROLLBACK queued behind it may never be sent: the transaction left open there was committed by
 *   the next request's COMMIT on the same connection, the failed request's writes and all;
 * - a named statement prepared before a migration changed its table's columns fails on this
 *   connection (`0A000 cached plan must not change result type`) until the connection is closed.
 */
async function runQuery(
  client: PoolClient,
  text: string,
  values: unknown[],
  unsure: (reason: Error) => void,
) {
  let result: QueryResult | QueryResult[];
  try {
    result = isReusedText(text)
      ? await runNamed(client, text, values, unsure)
      : await client.query(text, values);
  } catch (error) {
    if (error instanceof Error && error.message === QUERY_TIMEOUT) unsure(error);
    throw error;
  }
  // Several statements in one text without values give one result each (pg's simple protocol):
  // handed on as they are, as pg's own pool would.
  return Array.isArray(result) ? result : detachedRows(result);
}

/**
 * What Kysely reads of a result, the rows moved into a new array and pg's emptied.
 *
 * Why: pg pushes the rows into an array it made when the query was sent. Under load a query waits
 * across enough scavenges for V8 to move that array to the old generation; every row pushed into
 * it later is then kept alive by it through each scavenge until the next full collection, long
 * after the request is done (a scavenge takes every old-to-young pointer as a root, whether its
 * old object is alive or not). So every row got promoted: ~25 KB per chat history page, and the
 * memory saver answered with a full collection every ~100 ms (bench/README.md, Chat). Emptying
 * pg's arrays (the field descriptions arrive with the rows: young too, held by the same result)
 * leaves no old object pointing at them.
 */
function detachedRows({ command, rowCount, rows, fields }: QueryResult): KyselyResult {
  const own = rows.slice();
  empty(rows);
  empty(fields);
  return { command, rowCount, rows: own };
}

/**
 * Overwritten before it is cut: an array cut to length 0 drops its element store whole, and a
 * store that was itself promoted would still point at the young values from the old generation.
 */
function empty(array: unknown[]): void {
  array.fill(undefined);
  array.length = 0;
}

/** The fields of a result that Kysely's PostgreSQL driver reads. */
type KyselyResult = Pick<QueryResult, 'command' | 'rowCount' | 'rows'>;

/** The reused texts are a small, fixed set: each is named (hashed) once, not on every run. */
const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `k${createHash('sha256').update(text).digest('base64url').slice(0, 22)}`;
    statementNames.set(text, name);
  }
  return name;
}

/** pg's message when `query_timeout` gives up on a query. */
const QUERY_TIMEOUT = 'Query read timeout';

/**
 * A reused text as a named prepared statement. Outside a transaction, one whose plan a migration
 * made stale runs again unnamed (and the connection is closed once released); inside one, the
 * transaction has failed anyway, and the error stands.
 */
async function runNamed(
  client: PoolClient,
  text: string,
  values: unknown[],
  unsure: (reason: Error) => void,
) {
  const outsideTransaction = client.getTransactionStatus() === 'I';
  try {
    return await client.query({ name: statementName(text), text, values });
  } catch (error) {
    if ((error as { code?: unknown }).code !== STALE_PLAN) throw error;
    unsure(error as Error);
    if (!outsideTransaction) throw error;
    return client.query(text, values);
  }
}

/** feature_not_supported: "cached plan must not change result type". */
const STALE_PLAN = '0A000';
