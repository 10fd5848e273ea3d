import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { legacyTextDigest } from '../../src/chat/message-text.js';
import { up } from '../../src/db/migrations/014_unkeyed_digests_cleared.js';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { twoMembers } from '../chat/fixture.js';

/**
 * 014 clears the digests of messages edited or deleted before it: those sent before keyed digests
 * carry an unkeyed one, which let whoever reads the database check guesses at a text it no longer
 * shows. A message never edited keeps its digest (and its text).
 */
describe.each(backends)('migration 014: unkeyed digests cleared ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('clears the digests of edited and deleted messages only', async () => {
    const { fan, id } = await twoMembers(t);
    const texts = ['kept', 'edited', 'deleted'];
    const sent = [];
    for (const text of texts) sent.push(await fan.sent(id, text));
    expect((await fan.edit(sent[1]!.id, 'changed')).statusCode).toBe(200);
    expect((await fan.delete(sent[2]!.id)).statusCode).toBe(200);
    // As an earlier release left them: unkeyed digests of the first texts.
    for (const [i, message] of sent.entries()) {
      await t.db
        .updateTable('chat_messages')
        .set({ text_digest: legacyTextDigest(texts[i]!) })
        .where('id', '=', message.id)
        .execute();
    }

    await t.db.transaction().execute((trx) => up(trx as unknown as Kysely<unknown>));

    const rows = await t.db
      .selectFrom('chat_messages')
      .select('text_digest')
      .where('conversation_id', '=', id)
      .orderBy('seq')
      .execute();
    expect(rows.map((row) => row.text_digest)).toEqual([legacyTextDigest('kept'), '', '']);
    // A retry of a cleared message's send is refused; the kept one still replays.
    expect((await fan.send(id, 'edited', sent[1]!.client_message_id)).statusCode).toBe(422);
    expect((await fan.send(id, 'kept', sent[0]!.client_message_id)).statusCode).toBe(200);
  });
});
