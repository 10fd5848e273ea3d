import type { Kysely } from 'kysely';

/**
 * The Chat group and blocks. A conversation row carries the counters every send raises
 * (`last_seq`, `version`), so one UPDATE on it numbers a message and serialises the sends of one
 * conversation; each member's read position lives in its own row; unread counts are computed from
 * it, never stored. Keys of deleted accounts become NULL (the hooks tombstone their messages
 * first), so conversations and their numbering outlive either member.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const user = 'users.id';
  await db.schema
    .createTable('conversations')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('influencer_id', 'varchar(36)', (c) => c.references(user).onDelete('set null'))
    .addColumn('starter_id', 'varchar(36)', (c) => c.references(user).onDelete('set null'))
    // Both member ids, sorted: one conversation per pair, whoever started it.
    .addColumn('pair_key', 'varchar(73)', (c) => c.notNull().unique())
    .addColumn('accepted_at', 'bigint')
    .addColumn('last_seq', 'integer', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_message_at', 'bigint')
    // The conversation list's order: the last message's time, or the creation's before one.
    .addColumn('activity_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('conversations_influencer_id')
    .on('conversations')
    .column('influencer_id')
    .execute();
  await db.schema
    .createIndex('conversations_starter_id')
    .on('conversations')
    .column('starter_id')
    .execute();

  await db.schema
    .createTable('conversation_members')
    .addColumn('conversation_id', 'varchar(36)', (c) =>
      c.notNull().references('conversations.id').onDelete('cascade'),
    )
    .addColumn('user_id', 'varchar(36)', (c) => c.notNull().references(user).onDelete('cascade'))
    .addColumn('last_read_seq', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('conversation_members_pk', ['conversation_id', 'user_id'])
    .execute();
  await db.schema
    .createIndex('conversation_members_user_id')
    .on('conversation_members')
    .column('user_id')
    .execute();

  await db.schema
    .createTable('chat_messages')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('conversation_id', 'varchar(36)', (c) =>
      c.notNull().references('conversations.id').onDelete('cascade'),
    )
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('sender_id', 'varchar(36)', (c) => c.references(user).onDelete('set null'))
    .addColumn('client_message_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('text_digest', 'varchar(64)', (c) => c.notNull())
    .addColumn('text', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('edited_at', 'bigint')
    .addColumn('deleted_at', 'bigint')
    .execute();
  // Paging by seq, and the unread count's range scan.
  await db.schema
    .createIndex('chat_messages_seq')
    .on('chat_messages')
    .columns(['conversation_id', 'seq'])
    .unique()
    .execute();
  // The changes feed; unique because every change stamps exactly one message.
  await db.schema
    .createIndex('chat_messages_version')
    .on('chat_messages')
    .columns(['conversation_id', 'version'])
    .unique()
    .execute();
  // A client_message_id is used once per sender, forever: concurrent duplicates collide here.
  await db.schema
    .createIndex('chat_messages_client_key')
    .on('chat_messages')
    .columns(['sender_id', 'client_message_id'])
    .unique()
    .execute();

  await db.schema
    .createTable('blocks')
    .addColumn('blocker_id', 'varchar(36)', (c) => c.notNull().references(user).onDelete('cascade'))
    .addColumn('blocked_id', 'varchar(36)', (c) => c.notNull().references(user).onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('blocks_pk', ['blocker_id', 'blocked_id'])
    .execute();
  await db.schema.createIndex('blocks_blocked_id').on('blocks').column('blocked_id').execute();
  await db.schema
    .createIndex('blocks_newest')
    .on('blocks')
    .columns(['blocker_id', 'created_at', 'blocked_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['blocks', 'chat_messages', 'conversation_members', 'conversations']) {
    await db.schema.dropTable(table).execute();
  }
}
