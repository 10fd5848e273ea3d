import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pairKey } from '../../src/chat/conversations.store.js';
import { up } from '../../src/db/migrations/016_deleted_members_unpaired.js';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';
import { twoMembers } from '../chat/fixture.js';

/**
 * 016 takes the ids of accounts deleted before it out of their conversations' `pair_key`, as
 * account deletion now does: the peer's row no longer names whom it talked to. A conversation of
 * two live members keeps its key (it is how a second start finds it).
 */
describe.each(backends)('migration 016: deleted members unpaired ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it("clears a deleted member's id from the pair key, and only there", async () => {
    const left = await twoMembers(t);
    const live = await twoMembers(t);
    await left.fan.sent(left.id, 'hello');
    const deleted = await left.fan.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });
    expect(deleted.statusCode).toBe(200);
    // As an earlier release left it: the pair key still names the deleted account.
    const formerKey = pairKey(left.fan.userId, left.influencer.userId);
    await t.db
      .updateTable('conversations')
      .set({ pair_key: formerKey })
      .where('id', '=', left.id)
      .execute();

    await t.db.transaction().execute((trx) => up(trx as unknown as Kysely<unknown>));

    const keys = new Map(
      (await t.db.selectFrom('conversations').select(['id', 'pair_key']).execute()).map((row) => [
        row.id,
        row.pair_key,
      ]),
    );
    expect(keys.get(left.id)).toBe(left.id);
    expect(keys.get(live.id)).toBe(pairKey(live.fan.userId, live.influencer.userId));
  });
});
