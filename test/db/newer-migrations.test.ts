// A database a newer build migrated further (a rolling deploy, or a rollback): this build still
// starts on it, says so once, and serves. Kysely alone refuses ("previously executed migration …
// is missing"), which would stop the rollback.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate, newerMigrations } from '../../src/db/migrate.js';
import { backends, type ProvisionedBackend } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { loadConfig } from '../../src/config.js';

describe.each(backends)('a database migrated by a newer build ($name)', (backend) => {
  let provisioned: ProvisionedBackend;
  let db: Db;
  beforeAll(async () => {
    provisioned = await backend.provision();
    const config = loadConfig(provisioned.env);
    db = await openDatabase(config.database);
    expect(await migrate(config.database, db)).toEqual([]);
    await sql`insert into kysely_migration (name, timestamp) values ('999_next_release', ${new Date().toISOString()})`.execute(
      db,
    );
  });
  afterAll(async () => {
    await db?.destroy();
    await provisioned?.drop();
  });

  it('is seen as such', async () => {
    expect(await newerMigrations(db)).toEqual(['999_next_release']);
  });

  it('starts this build, which serves and warns once', async () => {
    const t = await TestApp.start(provisioned);
    try {
      expect((await t.register()).userId).toBeDefined();
      const warnings = t.logs.filter((line) => /migrated by a newer build/.test(line));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('999_next_release');
    } finally {
      await t.close();
    }
  });

  it("a database still missing one of this build's migrations is not taken for a newer one", async () => {
    await sql`delete from kysely_migration where name = '011_prefixes_after_spaces'`.execute(db);
    try {
      expect(await newerMigrations(db)).toEqual([]);
    } finally {
      await sql`insert into kysely_migration (name, timestamp) values ('011_prefixes_after_spaces', ${new Date().toISOString()})`.execute(
        db,
      );
    }
  });
});
