import type { Kysely } from 'kysely';

/**
 * When the account's password was last changed or reset (null: never since this migration). A
 * reset code asked for before a change must not be mailed after it (the request waiting in the
 * outbox, or its send retried): it would undo the change. `updated_at` moves on profile edits too.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').addColumn('password_changed_at', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('password_changed_at').execute();
}
