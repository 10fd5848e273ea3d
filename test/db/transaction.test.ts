import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { inTransaction } from '../../src/db/transaction.js';
import { createPostgresDatabase } from '../helpers/backends.js';

const adminUrl = process.env.TEST_DATABASE_URL;

interface Opened {
  readonly name: string;
  open(): Promise<{ db: Db; drop(): Promise<void> }>;
}

const databases: Opened[] = [
  {
    name: 'sqlite',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'account-service-tx-'));
      const db = await openDatabase({ kind: 'sqlite', path: join(dir, 'tx.db') });
      return { db, drop: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
];
if (adminUrl) {
  databases.push({
    name: 'postgres',
    async open() {
      const database = await createPostgresDatabase(adminUrl);
      const db = await openDatabase({ kind: 'postgres', url: database.url });
      return { db, drop: () => database.drop() };
    },
  });
}

/** An error as PostgreSQL reports a lost deadlock. */
const deadlock = () => Object.assign(new Error('deadlock detected'), { code: '40P01' });

describe.each(databases)('inTransaction ($name)', (opened) => {
  let db: Db;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ db, drop } = await opened.open());
    await sql`create table tx_probe (id integer primary key, n integer not null)`.execute(db);
    await sql`insert into tx_probe (id, n) values (1, 0), (2, 0)`.execute(db);
  });
  afterAll(async () => {
    await db?.destroy();
    await drop?.();
  });

  const countOf = async (id: number) =>
    (await sql<{ n: number }>`select n from tx_probe where id = ${id}`.execute(db)).rows[0]?.n;

  it('runs a transaction that lost a deadlock again, undoing each failed attempt', async () => {
    const before = await countOf(1);
    let attempts = 0;
    let rollbacks = 0;
    const result = await inTransaction(
      db,
      async (trx) => {
        attempts += 1;
        await sql`update tx_probe set n = n + 1 where id = 1`.execute(trx);
        if (attempts < 3) throw deadlock();
        return 'done';
      },
      async () => {
        rollbacks += 1;
      },
    );
    expect([result, attempts, rollbacks]).toEqual(['done', 3, 2]);
    expect(await countOf(1)).toBe(Number(before) + 1); // the failed attempts left nothing
  });

  it('gives up after three attempts, and never retries any other error', async () => {
    let attempts = 0;
    await expect(
      inTransaction(db, async () => {
        attempts += 1;
        throw deadlock();
      }),
    ).rejects.toMatchObject({ code: '40P01' });
    expect(attempts).toBe(3);

    attempts = 0;
    const constraint = Object.assign(new Error('duplicate key'), { code: '23505' });
    await expect(
      inTransaction(db, async () => {
        attempts += 1;
        throw constraint;
      }),
    ).rejects.toBe(constraint);
    expect(attempts).toBe(1);
  });
});

describe.skipIf(!adminUrl)('inTransaction on a real PostgreSQL deadlock', () => {
  let db: Db;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ db, drop } = await (databases[1] as Opened).open());
    await sql`create table tx_probe (id integer primary key, n integer not null)`.execute(db);
    await sql`insert into tx_probe (id, n) values (1, 0), (2, 0)`.execute(db);
  });
  afterAll(async () => {
    await db?.destroy();
    await drop?.();
  });

  it('two transactions taking two rows in opposite orders both commit', async () => {
    let holding = 0;
    let bothHold: () => void = () => undefined;
    const bothHolding = new Promise<void>((resolve) => (bothHold = resolve));
    let attempts = 0;
    const touch = (first: number, second: number) =>
      inTransaction(db, async (trx) => {
        attempts += 1;
        await sql`update tx_probe set n = n + 1 where id = ${first}`.execute(trx);
        holding += 1;
        if (holding === 2) bothHold();
        await bothHolding; // each holds its first row: the second updates cross
        await sql`update tx_probe set n = n + 1 where id = ${second}`.execute(trx);
      });
    await Promise.all([touch(1, 2), touch(2, 1)]);
    expect(attempts).toBe(3); // PostgreSQL rolled one back; it ran again
    const { rows } = await sql<{ n: number }>`select n from tx_probe order by id`.execute(db);
    expect(rows.map((r) => Number(r.n))).toEqual([2, 2]);
  });
});
