import type { Kysely } from 'kysely';

/**
 * The conversation list reads a member's conversations newest activity first. A member is either
 * the conversation's influencer or its starter, so one index per side, ordered by activity, lets
 * a page read its `limit` rows from each side and stop, instead of joining and sorting every
 * conversation the member has (a creator may have thousands). They replace the single-column
 * indexes on the same leading columns, which every other lookup by member still uses.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const side of ['influencer_id', 'starter_id']) {
    const name = side.replace('_id', '');
    await db.schema.dropIndex(`conversations_${side}`).execute();
    await db.schema
      .createIndex(`conversations_${name}_activity`)
      .on('conversations')
      .columns([side, 'activity_at', 'id'])
      .execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const side of ['influencer_id', 'starter_id']) {
    await db.schema.dropIndex(`conversations_${side.replace('_id', '')}_activity`).execute();
    await db.schema.createIndex(`conversations_${side}`).on('conversations').column(side).execute();
  }
}
