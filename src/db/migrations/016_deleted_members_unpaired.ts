import { sql, type Kysely } from 'kysely';

/**
 * A conversation whose member deleted the account kept that account's id in `pair_key` (both
 * member ids), so the peer's row still named whom it talked to. Account deletion now sets the key
 * to the conversation's own id (chat/conversations.store.ts leaveConversations); this does the
 * same for the deletions made before. Nothing looks such a pair up again: a deleted id never
 * comes back.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`UPDATE conversations SET pair_key = id
             WHERE (influencer_id IS NULL OR starter_id IS NULL) AND pair_key <> id`.execute(db);
}

/** Nothing to undo: the former build never looks up a pair with a deleted member. */
export async function down(): Promise<void> {}
