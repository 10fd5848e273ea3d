import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findUserByEmail, insertUser } from '../../src/accounts/users.store.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { isDatabaseUnavailable } from '../../src/db/outage.js';
import { inTransaction } from '../../src/db/transaction.js';
import { createPostgresDatabase } from '../helpers/backends.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const adminUrl = process.env.TEST_DATABASE_URL;
if (!adminUrl) console.warn('TEST_DATABASE_URL not set: skipping test/db/unsure-connections.');

/**
 * A pooled PostgreSQL connection whose state nobody knows after a failure must not serve the next
 * request: a transaction left open on it, or statements prepared before a migration.
 */
describe.skipIf(!adminUrl)('PostgreSQL: connections left in an unknown state', () => {
  let database: { url: string; drop(): Promise<void> };
  let other: pg.Client;
  const opened: Db[] = [];
  const open = async (options: { queryTimeoutMs?: number } = {}) => {
    const db = await openDatabase(
      { kind: 'postgres', url: database.url },
      { poolSize: 1, ...options },
    );
    opened.push(db);
    return db;
  };

  beforeAll(async () => {
    database = await createPostgresDatabase(adminUrl!);
    other = new pg.Client({ connectionString: database.url });
    await other.connect();
  });
  afterEach(async () => {
    for (const db of opened.splice(0)) await db.destroy();
  });
  afterAll(async () => {
    await other?.end();
    await database?.drop();
  });

  it('a transaction that timed out is never committed by the next request on its connection', async () => {
    await other.query('create table t (id int primary key, v int not null)');
    await other.query('insert into t values (1, 0), (2, 0), (3, 0)');
    const db = await open({ queryTimeoutMs: 300 });
    await other.query('begin');
    await other.query('update t set v = 100 where id = 1'); // holds row 1
    const failed = inTransaction(db, async (trx) => {
      await sql`update t set v = 2 where id = 2`.execute(trx);
      await sql`update t set v = 1 where id = 1`.execute(trx); // waits past the timeout
    });
    await expect(failed).rejects.toThrow();
    await other.query('commit');
    // The next requests on the pool (of one connection): a write of its own, then a transaction.
    await sql`update t set v = 3 where id = 3`.execute(db);
    await inTransaction(db, async (trx) => void (await sql`select 1`.execute(trx)));
    const { rows } = await other.query('select id, v from t order by id');
    expect(rows).toEqual([
      { id: 1, v: 100 },
      { id: 2, v: 0 }, // the failed transaction's write: rolled back, not committed later
      { id: 3, v: 3 }, // committed at once, not inside the failed transaction
    ]);
  });

  it('a connection that stopped answering mid-transaction is not given to the next request', async () => {
    const proxy = await TcpProxy.start(Number(new URL(database.url).port || 5432));
    try {
      const url = new URL(database.url);
      url.host = `127.0.0.1:${proxy.port}`;
      const db = await openDatabase(
        { kind: 'postgres', url: url.href },
        { poolSize: 1, queryTimeoutMs: 300 },
      );
      opened.push(db);
      const failed = inTransaction(db, async (trx) => {
        await sql`select 1`.execute(trx);
        proxy.silenceOpenFlows(); // the network drops the flow: no answer, no reset
        await sql`select 2`.execute(trx);
      });
      await expect(failed).rejects.toThrow(/timeout/i);
      // The pool's one connection is a new one, which answers.
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db);
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await proxy.close();
    }
  });

  it('a statement the client stopped waiting for stops on the server too (statement_timeout)', async () => {
    const db = await open({ queryTimeoutMs: 300 });
    await expect(sql`select pg_sleep(5)`.execute(db)).rejects.toThrow();
    const running = async () =>
      (
        await other.query(
          `select count(*)::int as running from pg_stat_activity
            where datname = current_database() and state = 'active'
              and query like 'select pg_sleep(5)%'`,
        )
      ).rows[0]?.running;
    // Not left holding a connection slot (and locks) for 5 s.
    await expect.poll(running, { timeout: 3_000, interval: 50 }).toBe(0);
    // When the server's cancel comes first, it answers as the client's timeout does: a 503 (the
    // client's own timeout far off, so that the server's is surely first).
    const patient = await open({ queryTimeoutMs: 3_000 });
    const cancelled = await inTransaction(patient, async (trx) => {
      await sql`set local statement_timeout = 50`.execute(trx);
      await sql`select pg_sleep(1)`.execute(trx);
    }).then(
      () => undefined,
      (reason: unknown) => reason as Error & { code?: string },
    );
    expect(cancelled?.code).toBe('57014');
    expect(isDatabaseUnavailable(cancelled as Error)).toBe(true);
  });

  it('statements prepared before a migration added a column keep working after it', async () => {
    const db = await open();
    await migrate({ kind: 'postgres', url: database.url }, db);
    const email = 'prepared@example.test';
    await insertUser(db, {
      id: '00000000-0000-4000-8000-000000000001',
      email,
      email_normalized: email,
      password_hash: 'h',
      email_confirmed_at: null,
      name: null,
      bio: null,
      avatar_url: null,
      created_at: 1,
      updated_at: 1,
      password_changed_at: null,
    });
    expect(await findUserByEmail(db, email)).toBeDefined(); // prepared on the connection
    await other.query('alter table users add column locale text'); // another instance's migration
    for (let i = 0; i < 3; i++) expect((await findUserByEmail(db, email))?.email).toBe(email);
    // Inside a transaction it cannot run again: a 503 (retry), and the connection is replaced.
    expect(await findUserByEmail(db, email)).toBeDefined(); // prepared again, on a new connection
    await other.query('alter table users add column theme text');
    const inside = inTransaction(db, (trx) => findUserByEmail(trx, email));
    const error = await inside.then(
      () => undefined,
      (reason: unknown) => reason as Error,
    );
    expect(error).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(error as Error), (error as Error).message).toBe(true);
    expect((await findUserByEmail(db, email))?.email).toBe(email);
  });

  it('a connection that died between the queries of a transaction counts as the database away', async () => {
    const db = await open();
    const transaction = inTransaction(db, async (trx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
      await other.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await sql`select 1`.execute(trx);
    });
    const error = await transaction.then(
      () => undefined,
      (reason: unknown) => reason as Error,
    );
    expect(error).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(error as Error), (error as Error).message).toBe(true);
  });
});
