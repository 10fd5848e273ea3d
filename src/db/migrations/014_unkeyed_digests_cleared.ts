import { sql, type Kysely } from 'kysely';

/**
 * Messages sent before keyed digests (message-text.ts) carry an unkeyed SHA-256 of their first
 * text; an edited or deleted one no longer shows that text, and its digest must not let whoever
 * reads the database or a backup check guesses at it. Its digest cannot be re-keyed (the text is
 * gone), and keyed and unkeyed ones look alike, so every edited or deleted message loses its
 * digest: a retry of its send with the same key now answers `422 idempotency_key_reused` instead
 * of the message (retries come within seconds of a send, not after an edit). Messages never
 * edited get a keyed digest at their first edit or their deletion (chat/messages.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`UPDATE chat_messages SET text_digest = ''
             WHERE (edited_at IS NOT NULL OR deleted_at IS NOT NULL) AND text_digest <> ''`.execute(
    db,
  );
}

/** Nothing to undo: the cleared digests are gone, and the earlier release reads '' as no match. */
export async function down(): Promise<void> {}
