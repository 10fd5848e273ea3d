import type { Kysely } from 'kysely';

/**
 * Sessions remember every refresh rotation of the last few seconds, not only the latest one, so a
 * tab presenting a token rotated twice in quick succession still gets the grace answer.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('recent_rotations', 'text').execute();
  await db.schema.alterTable('sessions').dropColumn('rotated_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('rotated_at', 'bigint').execute();
  await db.schema.alterTable('sessions').dropColumn('recent_rotations').execute();
}
