import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KyselyPlugin } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';

const run = promisify(execFile);
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
      /simulated failure/,
    );
    const second = await open(path);
    await expect(migrateToLatest(second)).resolves.toBeUndefined();
  });

  it('two processes migrating one fresh file at once both succeed', async () => {
    const path = freshPath();
    const migrate = () =>
      run(process.execPath, ['--import', 'tsx', 'src/db/migrate-cli.ts'], {
        env: { ...process.env, DATABASE_URL: `sqlite:${path}` },
      });
    const outcomes = await Promise.allSettled([migrate(), migrate()]);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? 'ok' : String(o.reason)))).toEqual([
      'ok',
      'ok',
    ]);
    const db = await open(path);
    const applied = await db
      .selectFrom('kysely_migration' as never)
      .selectAll()
      .execute();
    expect(applied).toHaveLength(6);
  });
});
