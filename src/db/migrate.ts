import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './database.js';
import * as initial from './migrations/001_initial.js';
import * as recentRotations from './migrations/002_recent_rotations.js';
import * as codeRequests from './migrations/003_code_requests.js';
import * as influencer from './migrations/004_influencer.js';
import * as chat from './migrations/005_chat.js';
import * as conversationActivity from './migrations/006_conversation_activity.js';

/** Migrations are imported, not read from disk, so they ship inside the build. */
const migrations: Record<string, Migration> = {
  '001_initial': initial,
  '002_recent_rotations': recentRotations,
  '003_code_requests': codeRequests,
  '004_influencer': influencer,
  '005_chat': chat,
  '006_conversation_activity': conversationActivity,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** Runs pending migrations. Kysely takes a lock first, so instances starting together do not race. */
export async function migrateToLatest(db: Db): Promise<void> {
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error !== undefined || failed !== undefined) {
    const reason = error instanceof Error ? error.message : String(error ?? '');
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${reason}`);
  }
}
