import type { Kysely } from 'kysely';

// Migrations take Kysely<unknown>: they describe the schema as it was then, not as tables.ts says now.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('email', 'varchar(254)', (c) => c.notNull())
    .addColumn('email_normalized', 'varchar(254)', (c) => c.notNull().unique())
    .addColumn('password_hash', 'varchar(255)', (c) => c.notNull())
    .addColumn('email_confirmed_at', 'bigint')
    .addColumn('name', 'varchar(400)')
    .addColumn('bio', 'text')
    .addColumn('avatar_url', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('user_id', 'varchar(36)', (c) =>
      c.notNull().references('users.id').onDelete('cascade'),
    )
    .addColumn('refresh_seed', 'varchar(64)', (c) => c.notNull())
    .addColumn('refresh_generation', 'integer', (c) => c.notNull())
    .addColumn('rotated_at', 'bigint')
    .addColumn('user_agent', 'varchar(512)')
    .addColumn('ip', 'varchar(64)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sessions_user_id').on('sessions').column('user_id').execute();
  await db.schema.createIndex('sessions_expires_at').on('sessions').column('expires_at').execute();

  await db.schema
    .createTable('one_time_codes')
    .addColumn('user_id', 'varchar(36)', (c) =>
      c.notNull().references('users.id').onDelete('cascade'),
    )
    .addColumn('purpose', 'varchar(32)', (c) => c.notNull())
    .addColumn('code_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('failed_attempts', 'integer', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('one_time_codes_pk', ['user_id', 'purpose'])
    .execute();

  await db.schema
    .createTable('mail_outbox')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('recipient', 'varchar(254)', (c) => c.notNull())
    .addColumn('subject', 'varchar(400)', (c) => c.notNull())
    .addColumn('sealed_body', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint')
    .addColumn('last_error', 'varchar(500)')
    .addColumn('failed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('mail_outbox_due')
    .on('mail_outbox')
    .columns(['next_attempt_at'])
    .execute();

  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('algorithm', 'varchar(16)', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('sealed_private_jwk', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['signing_keys', 'mail_outbox', 'one_time_codes', 'sessions', 'users']) {
    await db.schema.dropTable(table).execute();
  }
}
