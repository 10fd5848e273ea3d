import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { isPostgres } from '../../src/db/dialect.js';
import { migrate } from '../../src/db/migrate.js';
import { createPostgresDatabase } from '../helpers/backends.js';

const adminUrl = process.env.TEST_DATABASE_URL;
if (!adminUrl) console.warn('TEST_DATABASE_URL not set: skipping test/db/schema-parity.');

/** Tables, their columns and their (named) indexes, as one sorted list of lines. */
async function schemaOf(db: Db): Promise<string[]> {
  const lines: string[] = [];
  for (const table of await db.introspection.getTables({ withInternalKyselyTables: true })) {
    for (const column of table.columns) lines.push(`column ${table.name}.${column.name}`);
  }
  const indexes = isPostgres(db)
    ? // Indexes the migrations name; not those PostgreSQL makes for a key or a UNIQUE constraint.
      await sql<{ table: string; name: string }>`
        select tablename as "table", indexname as name from pg_indexes
        where schemaname = current_schema()
          and indexname not in (select conname from pg_constraint)`.execute(db)
    : await sql<{ table: string; name: string }>`
        select tbl_name as "table", name from sqlite_master
        where type = 'index' and name not like 'sqlite_autoindex_%'`.execute(db);
  for (const { table, name } of indexes.rows) lines.push(`index ${table}.${name}`);
  return lines.sort();
}

/**
 * README: one set of migrations for SQLite and PostgreSQL. Where they branch on the database
 * (types, INCLUDE, SQLite's own search table), they must still end with the same tables, columns
 * and indexes: a query plan, an upsert's conflict target or a lookup that relies on an index one
 * database lacks is found nowhere else.
 */
describe.skipIf(!adminUrl)('the schema the migrations make', () => {
  let dir: string;
  let database: { url: string; drop(): Promise<void> };
  let sqlite: Db;
  let postgres: Db;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'schema-parity-'));
    const sqliteAt = { kind: 'sqlite', path: join(dir, 'service.db') } as const;
    sqlite = await openDatabase(sqliteAt);
    expect(await migrate(sqliteAt, sqlite)).toEqual([]);
    database = await createPostgresDatabase(adminUrl!);
    const postgresAt = { kind: 'postgres', url: database.url } as const;
    postgres = await openDatabase(postgresAt);
    expect(await migrate(postgresAt, postgres)).toEqual([]);
  });

  afterAll(async () => {
    await sqlite?.destroy();
    await postgres?.destroy();
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('has the same tables, columns and indexes on SQLite and on PostgreSQL', async () => {
    const [onSqlite, onPostgres] = [await schemaOf(sqlite), await schemaOf(postgres)];
    const only = (a: string[], b: string[]) => a.filter((line) => !b.includes(line));
    expect({
      sqliteOnly: only(onSqlite, onPostgres),
      postgresOnly: only(onPostgres, onSqlite),
    }).toEqual({ sqliteOnly: SQLITE_ONLY, postgresOnly: POSTGRES_ONLY });
  });
});

/**
 * The directory's search, which differs on purpose (004_influencer, README "Directory search"):
 * SQLite's FTS5 trigram table (and its shadow tables, keyed by the profiles' `doc_id`), where
 * PostgreSQL has pg_trgm indexes. Nothing else may differ.
 */
const SQLITE_ONLY = [
  'column influencer_profiles.doc_id',
  ...['handle', 'search_name'].map((c) => `column influencer_search.${c}`),
  ...['k', 'v'].map((c) => `column influencer_search_config.${c}`),
  ...['block', 'id'].map((c) => `column influencer_search_data.${c}`),
  ...['id', 'sz'].map((c) => `column influencer_search_docsize.${c}`),
  ...['pgno', 'segid', 'term'].map((c) => `column influencer_search_idx.${c}`),
];
const POSTGRES_ONLY = [
  'index influencer_profiles.influencer_profiles_handle_trgm',
  'index influencer_profiles.influencer_profiles_name_trgm',
];
