import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * An address is at most 254 characters as given, but its lower-cased form, which the unique index
 * compares, can be longer: `İ` (U+0130) lower-cases into two code points. PostgreSQL refused such
 * an address of 254 characters (the column held 254), which SQLite, not enforcing lengths,
 * accepted. Every character lower-cases into at most two, so 508 always fits. Widening a varchar
 * rewrites neither the table nor its index on PostgreSQL.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`alter table users alter column email_normalized type varchar(508)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`alter table users alter column email_normalized type varchar(254)`.execute(db);
}
