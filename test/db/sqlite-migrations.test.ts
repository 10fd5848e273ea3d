import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import type { KyselyPlugin } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';

const dirs: string[] = [];
const opened: Db[] = [];

function freshPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-migrations-'));
  dirs.push(dir);
  return join(dir, 'service.db');
}

async function open(path: string): Promise<Db> {
  const db = await openDatabase({ kind: 'sqlite', path });
  opened.push(db);
  return db;
}

afterEach(async () => {
  for (const db of opened.splice(0)) await db.destroy();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Fails the statement that creates `table`, as a crash or a full disk at that point would. */
function failAt(table: string): KyselyPlugin {
  return {
    transformQuery(args) {
      const node = args.node as {
        kind: string;
        table?: { table: { identifier: { name: string } } };
      };
      if (node.kind === 'CreateTableNode' && node.table?.table.identifier.name === table)
        throw new Error(`simulated failure before creating ${table}`);
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
}

describe('SQLite migrations', () => {
  it('a run that fails halfway leaves the schema as it was, and the next start finishes the job', async () => {
    const path = freshPath();
    const first = await open(path);
    // 004_influencer fails after creating influencer_profiles.
    await expect(migrateToLatest(first.withPlugin(failAt('follows')))).rejects.toThrow(
      /^migration 004_influencer failed: simulated failure/,
    );
    const second = await open(path);
    await expect(migrateToLatest(second)).resolves.toBeUndefined();
  });

  it('a failure before any migration ran is reported as the migrations failing', async () => {
    const db = await open(freshPath());
    await expect(migrateToLatest(db.withPlugin(failAt('kysely_migration')))).rejects.toThrow(
      /^migrations failed: simulated failure/,
    );
  });

  it('a transaction takes the write lock as it begins (IMMEDIATE): another process waits for it', async () => {
    const path = freshPath();
    const db = await open(path);
    await migrateToLatest(db);
    const other = new SQLite(path);
    other.pragma('busy_timeout = 0');
    try {
      // Nothing written yet: a deferred BEGIN would hold no lock here, and `npm run migrate` beside
      // a starting service could read the migration state, then fail to write it.
      await db.transaction().execute(async () => {
        expect(() => other.exec('begin immediate')).toThrow(/locked|busy/i);
      });
    } finally {
      other.close();
    }
  });
});
