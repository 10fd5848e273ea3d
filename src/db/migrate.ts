import { Migrator, sql, type Migration, type MigrationProvider } from 'kysely';
import type { DatabaseLocation } from '../config.js';
import { openDatabase, type Db } from './database.js';
import * as initial from './migrations/001_initial.js';
import * as recentRotations from './migrations/002_recent_rotations.js';
import * as codeRequests from './migrations/003_code_requests.js';
import * as influencer from './migrations/004_influencer.js';
import * as chat from './migrations/005_chat.js';
import * as conversationActivity from './migrations/006_conversation_activity.js';
import * as symbolFacets from './migrations/007_symbol_facets.js';
import * as normalizedEmailLength from './migrations/008_normalized_email_length.js';
import * as outboxPendingIndex from './migrations/009_outbox_pending_index.js';
import * as composedEmails from './migrations/010_composed_emails.js';
import * as prefixesAfterSpaces from './migrations/011_prefixes_after_spaces.js';
import * as prefixesAfterApostrophes from './migrations/012_prefixes_after_apostrophes.js';
import * as passwordChangedAt from './migrations/013_password_changed_at.js';
import * as unkeyedDigestsCleared from './migrations/014_unkeyed_digests_cleared.js';
import * as lookAlikesFolded from './migrations/015_look_alikes_folded.js';
import * as deletedMembersUnpaired from './migrations/016_deleted_members_unpaired.js';
import * as readinessProbe from './migrations/017_readiness_probe.js';

/** Migrations are imported, not read from disk, so they ship inside the build. */
const migrations: Record<string, Migration> = {
  '001_initial': initial,
  '002_recent_rotations': recentRotations,
  '003_code_requests': codeRequests,
  '004_influencer': influencer,
  '005_chat': chat,
  '006_conversation_activity': conversationActivity,
  '007_symbol_facets': symbolFacets,
  '008_normalized_email_length': normalizedEmailLength,
  '009_outbox_pending_index': outboxPendingIndex,
  '010_composed_emails': composedEmails,
  '011_prefixes_after_spaces': prefixesAfterSpaces,
  '012_prefixes_after_apostrophes': prefixesAfterApostrophes,
  '013_password_changed_at': passwordChangedAt,
  '014_unkeyed_digests_cleared': unkeyedDigestsCleared,
  '015_look_alikes_folded': lookAlikesFolded,
  '016_deleted_members_unpaired': deletedMembersUnpaired,
  '017_readiness_probe': readinessProbe,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** Runs pending migrations behind the migration lock, so instances starting together do not race. */
export async function migrateToLatest(db: Db): Promise<void> {
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error !== undefined || failed !== undefined) {
    const reason = error instanceof Error ? error.message : String(error ?? '');
    const which = failed === undefined ? 'migrations' : `migration ${failed.migrationName}`;
    throw new Error(`${which} failed: ${reason}`, { cause: error });
  }
}

/**
 * The migrations a newer build ran that this one does not know, once this one's have all run
 * (an instance of the former build restarting during a rolling deploy, or a rollback); else none.
 */
export async function newerMigrations(db: Db): Promise<string[]> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  if (!tables.some((table) => table.name === 'kysely_migration')) return [];
  const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
  const executed = new Set(rows.map((row) => row.name));
  const known = Object.keys(migrations);
  if (!known.every((name) => executed.has(name))) return [];
  const last = known.sort().at(-1) ?? '';
  const unknown = [...executed].filter((name) => !(name in migrations));
  return unknown.every((name) => name > last) ? unknown.sort() : [];
}

/**
 * Runs pending migrations of the database at `location`, whose service connection is `db`. On
 * PostgreSQL they run on a connection of their own, in one transaction that holds the migration
 * lock and has no statement timeout (migration-dialect.ts): a second instance waits for a long
 * migration, or a long index build, instead of failing.
 *
 * A database a newer build has migrated further is left as it is, and the names of its newer
 * migrations answered: migrations only add (columns, tables, indexes, rows the former build
 * ignores), so this build still runs on it, where refusing to start would stop a rollback, or an
 * instance of the former build restarting during a rolling deploy. The newer build may be
 * migrating while this one waits for the lock: Kysely then refuses the migration it does not
 * know, and the database is looked at again.
 */
export async function migrate(location: DatabaseLocation, db: Db): Promise<string[]> {
  const newer = await newerMigrations(db);
  if (newer.length > 0) return newer;
  try {
    await migrateOwnConnection(location, db);
    return [];
  } catch (error) {
    const newerMeanwhile = await newerMigrations(db).catch(() => []);
    if (newerMeanwhile.length > 0) return newerMeanwhile;
    throw error;
  }
}

async function migrateOwnConnection(location: DatabaseLocation, db: Db): Promise<void> {
  if (location.kind !== 'postgres') return migrateToLatest(db);
  const own = await openDatabase(location, { poolSize: 1, queryTimeoutMs: 0, forMigrations: true });
  try {
    await migrateToLatest(own);
  } finally {
    await own.destroy();
  }
}
