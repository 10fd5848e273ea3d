import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { errorOf, twoMembers } from '../chat/fixture.js';

describe.each(backends)('blocks ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('PUT blocks, repeating it changes nothing; DELETE lifts it, also repeatably', async () => {
    const { fan, influencer } = await twoMembers(t);
    const url = `/api/blocks/${influencer.userId}`;
    for (let i = 0; i < 2; i++) {
      const response = await fan.call('PUT', url);
      expect([response.statusCode, response.json()]).toEqual([200, { blocked: true }]);
    }
    const rows = await t.db
      .selectFrom('blocks')
      .selectAll()
      .where('blocker_id', '=', fan.userId)
      .execute();
    expect(rows.map((r) => r.blocked_id)).toEqual([influencer.userId]);
    for (let i = 0; i < 2; i++) {
      const response = await fan.call('DELETE', url);
      expect([response.statusCode, response.json()]).toEqual([200, { blocked: false }]);
    }
    expect(
      await t.db.selectFrom('blocks').selectAll().where('blocker_id', '=', fan.userId).execute(),
    ).toEqual([]);
  });

  it('blocking oneself is 400 cannot_block_self; an unknown account is 404', async () => {
    const { fan } = await twoMembers(t);
    expect(errorOf(await fan.call('PUT', `/api/blocks/${fan.userId}`))).toEqual([
      400,
      'cannot_block_self',
    ]);
    for (const id of [randomUUID(), 'not-an-id', '%00']) {
      expect(errorOf(await fan.call('PUT', `/api/blocks/${id}`))).toEqual([404, 'not_found']);
      expect(errorOf(await fan.call('DELETE', `/api/blocks/${id}`))).toEqual([404, 'not_found']);
    }
  });

  it('a block stops sending both ways: user_blocked for the blocker, cannot_message for the blocked', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    await fan.call('PUT', `/api/blocks/${influencer.userId}`);
    expect(errorOf(await fan.send(id, 'hi'))).toEqual([403, 'user_blocked']);
    expect(errorOf(await influencer.send(id, 'hi'))).toEqual([403, 'cannot_message']);
    expect(await fan.conversation(id)).toMatchObject({ can_send: false, blocked_by_me: true });
    expect(await influencer.conversation(id)).toMatchObject({
      can_send: false,
      blocked_by_me: false,
    });
    expect((await fan.conversation(id)).last_seq).toBe(0);
  });

  it('unblocking restores messaging', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    await influencer.call('PUT', `/api/blocks/${fan.userId}`);
    await influencer.call('DELETE', `/api/blocks/${fan.userId}`);
    expect(await fan.conversation(id)).toMatchObject({ can_send: true, blocked_by_me: false });
    await fan.sent(id, 'hello again');
    await influencer.sent(id, 'hi');
  });

  it('blocks need a token', async () => {
    const { influencer } = await twoMembers(t);
    expect((await t.call('PUT', `/api/blocks/${influencer.userId}`)).statusCode).toBe(401);
  });
});
