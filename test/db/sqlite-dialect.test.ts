import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { queryPlan } from '../helpers/query-plan.js';

interface Probe {
  probe: { id: number; n: number; t: string; b: Uint8Array | null };
}

/** Plan and results of the `+?` placeholders (sqlite-dialect.ts) against plain SQLite semantics. */
describe('SQLite statements planned once', () => {
  let db: Kysely<Probe>;
  beforeAll(async () => {
    db = (await openDatabase({ kind: 'sqlite', path: ':memory:' })) as unknown as Kysely<Probe>;
    await sql`create table probe (id integer primary key, n integer not null, t text not null, b blob)`.execute(
      db,
    );
    await sql`create index probe_n on probe (n)`.execute(db);
    await sql`insert into probe values (1, 5, '5', x'0102'), (2, 7, 'seven', null), (3, 9, '09', null)`.execute(
      db,
    );
  });
  afterAll(() => db?.destroy());

  const ids = (rows: { id: number }[]) => rows.map((row) => row.id);

  it('binds every value as +?, never as a bare ? that SQLite would plan again on each run', () => {
    const query = db
      .selectFrom('probe')
      .select('id')
      .where('n', '=', 5)
      .where('t', 'in', ['5', 'seven'])
      .limit(3)
      .compile();
    expect(query.parameters).toEqual([5, '5', 'seven', 3]);
    expect(query.sql.match(/\+\?/g)).toHaveLength(4);
    expect(query.sql.replaceAll('+?', '')).not.toContain('?');
  });

  it('compares values as a plain ? does: the column gives the affinity', async () => {
    const byText = db
      .selectFrom('probe')
      .select('id')
      .where('n', '=', '5' as unknown as number);
    expect(ids(await byText.execute())).toEqual([1]);
    const byNumber = db
      .selectFrom('probe')
      .select('id')
      .where('t', '=', 9 as unknown as string);
    expect(ids(await byNumber.execute())).toEqual([]); // TEXT affinity: 9 becomes '9', not '09'
    const blob = db
      .selectFrom('probe')
      .select('id')
      .where('b', '=', new Uint8Array([1, 2]));
    expect(ids(await blob.execute())).toEqual([1]);
    const none = db.selectFrom('probe').select('id').where('b', 'is', null).orderBy('id');
    expect(ids(await none.execute())).toEqual([2, 3]);
    const page = db.selectFrom('probe').select('id').orderBy('id').limit(2).offset(1);
    expect(ids(await page.execute())).toEqual([2, 3]);
  });

  it('still searches the index for equality, ranges and lists', async () => {
    for (const query of [
      db.selectFrom('probe').select('id').where('n', '=', 7),
      db.selectFrom('probe').select('id').where('n', '>', 6).where('n', '<', 9),
      db.selectFrom('probe').select('id').where('n', 'in', [5, 9]),
    ]) {
      expect(query.compile().parameters.length).toBeGreaterThan(0);
      expect(await queryPlan(db as unknown as Db, query)).toContain('USING COVERING INDEX probe_n');
    }
  });
});
