import { sql, type Kysely } from 'kysely';

/**
 * One row that SQLite's readiness check writes (operations/health.ts): a file system the kernel
 * turned read-only under the service (ext4's emergency read-only after a disk error) still
 * answers reads, and says nothing of it to `access()` or the mount flags; only a write tells.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('readiness_probe')
    .ifNotExists()
    .addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('checked_at', 'bigint', (column) => column.notNull())
    .execute();
  await sql`INSERT INTO readiness_probe (id, checked_at) VALUES (1, 0)
            ON CONFLICT (id) DO NOTHING`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('readiness_probe').ifExists().execute();
}
