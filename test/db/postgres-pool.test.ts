import type { Pool, PoolClient, QueryResult } from 'pg';
import { describe, expect, it } from 'vitest';
import { kyselyPool } from '../../src/db/postgres-pool.js';

/** A pool of one client whose every query answers with `result` (what pg hands back). */
function poolAnswering(result: QueryResult) {
  const client = {
    query: async () => result,
    release: () => undefined,
    getTransactionStatus: () => 'I',
  } as unknown as PoolClient;
  return { connect: async () => client, end: async () => undefined } as unknown as Pool;
}

describe('the PostgreSQL pool as Kysely sees it', () => {
  it("hands the rows over in an array of their own and empties pg's arrays, so no old array holds them", async () => {
    const rows = [{ id: 'a' }, { id: 'b' }];
    const pgRows = [...rows];
    const fields = [{ name: 'id' }];
    const result = {
      command: 'SELECT',
      rowCount: 2,
      rows: pgRows,
      fields,
    } as unknown as QueryResult;
    const client = await kyselyPool(poolAnswering(result)).connect();

    const answer = (await client.query('select 1', [])) as unknown as QueryResult;

    expect(answer.rows).toEqual(rows);
    expect(answer.rows).not.toBe(pgRows);
    expect(pgRows).toHaveLength(0);
    expect(fields).toHaveLength(0);
    expect(answer.command).toBe('SELECT');
    expect(answer.rowCount).toBe(2);
  });

  it('hands on the results of a text of several statements as pg gives them', async () => {
    const results = [{ command: 'SELECT', rowCount: 0, rows: [], fields: [] }];
    const client = await kyselyPool(poolAnswering(results as unknown as QueryResult)).connect();
    expect(await client.query('select 1; select 2', [])).toBe(results);
  });

  it('gives Kysely one wrapper per pooled client, so it keeps one connection object per client', async () => {
    const result = {
      command: 'SELECT',
      rowCount: 0,
      rows: [],
      fields: [],
    } as unknown as QueryResult;
    const pool = kyselyPool(poolAnswering(result));
    expect(await pool.connect()).toBe(await pool.connect());
  });
});
