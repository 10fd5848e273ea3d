import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp, type Account } from '../helpers/test-app.js';
import { ChatClient, errorOf, start } from '../chat/fixture.js';
import { creator, follow, type Creator } from '../influencer/support.js';

describe.each(backends)('blocks, follows and can_message ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const block = (by: Account, userId: string) =>
    t.call('PUT', `/api/blocks/${userId}`, { token: by.accessToken });
  const unblock = (by: Account, userId: string) =>
    t.call('DELETE', `/api/blocks/${userId}`, { token: by.accessToken });
  const profile = async (c: Creator, viewer: Account) =>
    (await t.call('GET', `/api/influencers/${c.id}`, { token: viewer.accessToken })).json()
      .influencer;
  const listed = async (c: Creator, viewer: Account) =>
    (await t.call('GET', `/api/influencers?q=${c.handle}`, { token: viewer.accessToken })).json()
      .influencers[0];
  const followRows = async (a: string, b: string) =>
    (
      await t.db
        .selectFrom('follows')
        .selectAll()
        .where((eb) =>
          eb.or([
            eb.and([eb('follower_id', '=', a), eb('influencer_id', '=', b)]),
            eb.and([eb('follower_id', '=', b), eb('influencer_id', '=', a)]),
          ]),
        )
        .execute()
    ).length;

  it('a block removes the follows both ways and their counts; unblocking restores neither', async () => {
    const a = await creator(t);
    const b = await creator(t);
    await follow(t, a.account, b.id);
    await follow(t, b.account, a.id);
    expect((await profile(a, a.account)).followers_count).toBe(1);
    expect((await block(a.account, b.id)).json()).toEqual({ blocked: true });
    expect(await followRows(a.id, b.id)).toBe(0);
    expect((await profile(a, a.account)).followers_count).toBe(0);
    expect((await profile(b, b.account)).followers_count).toBe(0);
    await block(a.account, b.id); // repeated: nothing moves below zero
    expect((await profile(b, b.account)).followers_count).toBe(0);
    await unblock(a.account, b.id);
    expect(await followRows(a.id, b.id)).toBe(0);
    expect(await profile(b, a.account)).toMatchObject({ is_following: false });
  });

  it('following across a block: 403 user_blocked for the blocker, 403 cannot_follow for the blocked', async () => {
    const star = await creator(t);
    const fan = await t.register();
    await block(star.account, fan.userId);
    expect(errorOf(await follow(t, fan, star.id))).toEqual([403, 'cannot_follow']);
    await unblock(star.account, fan.userId);
    await block(fan, star.id);
    expect(errorOf(await follow(t, fan, star.id))).toEqual([403, 'user_blocked']);
    expect(await followRows(fan.userId, star.id)).toBe(0);
    await unblock(fan, star.id);
    expect((await follow(t, fan, star.id)).statusCode).toBe(200);
  });

  it('a follow and a block at once never leave a follow across the block', async () => {
    for (let round = 0; round < 5; round++) {
      const star = await creator(t);
      const fan = await t.register();
      const [followed, blocked] = await Promise.all([
        follow(t, fan, star.id),
        block(star.account, fan.userId),
      ]);
      expect(blocked.statusCode).toBe(200);
      expect([200, 403]).toContain(followed.statusCode);
      expect(await followRows(fan.userId, star.id)).toBe(0);
      expect((await profile(star, star.account)).followers_count).toBe(0);
    }
  });

  it('can_message: false across a block either way; true with an accepted conversation whatever the policy', async () => {
    const star = await creator(t, { dm_policy: 'everyone' });
    const fan = new ChatClient(t, await t.register());
    expect((await profile(star, fan.account)).can_message).toBe(true);
    await block(star.account, fan.userId);
    expect((await profile(star, fan.account)).can_message).toBe(false);
    await unblock(star.account, fan.userId);
    await block(fan.account, star.id);
    expect((await profile(star, fan.account)).can_message).toBe(false);
    await unblock(fan.account, star.id);

    const id = (await start(fan, star.id)).json().conversation.id as string;
    await fan.sent(id, 'hello');
    const influencer = new ChatClient(t, star.account);
    await influencer.call('PATCH', '/api/influencers/me', { dm_policy: 'nobody' });
    expect((await profile(star, fan.account)).can_message).toBe(false);
    await influencer.sent(id, 'welcome'); // accepts the conversation
    expect((await profile(star, fan.account)).can_message).toBe(true);
    const listed = (
      await t.call('GET', '/api/influencers?q=' + star.handle, { token: fan.account.accessToken })
    ).json().influencers;
    expect(listed[0]).toMatchObject({ id: star.id, can_message: true });
  });

  it('can_message: a block wins over an accepted conversation, either way', async () => {
    const star = await creator(t, { dm_policy: 'everyone' });
    const fan = new ChatClient(t, await t.register());
    const id = (await start(fan, star.id)).json().conversation.id as string;
    await fan.sent(id, 'hello');
    await new ChatClient(t, star.account).sent(id, 'welcome'); // accepts the conversation
    expect((await profile(star, fan.account)).can_message).toBe(true);
    await block(star.account, fan.userId);
    expect((await profile(star, fan.account)).can_message).toBe(false);
    expect(await listed(star, fan.account)).toMatchObject({ id: star.id, can_message: false });
    await unblock(star.account, fan.userId);
    await block(fan.account, star.id);
    expect((await profile(star, fan.account)).can_message).toBe(false);
    expect(await listed(star, fan.account)).toMatchObject({ id: star.id, can_message: false });
  });

  it('directory pages answer can_message from their own query: blocks either way, conversations past policy', async () => {
    // Every kind of directory query: a substring (walk, then the substring index), a word-start
    // prefix, and a listing; each must tell what the profile view tells.
    const listings = (c: Creator, word: string) => [
      `q=${c.handle}`,
      `q=${c.handle}&category=music&sort=name`,
      `q=${word.slice(0, 2)}&limit=100`,
      'sort=newest&limit=100',
    ];
    const listedAs = async (c: Creator, word: string, viewer: Account) => {
      const seen = [];
      for (const query of listings(c, word)) {
        const response = await t.call('GET', `/api/influencers?${query}`, {
          token: viewer.accessToken,
        });
        expect(response.statusCode, query).toBe(200);
        const found = response.json().influencers.find((i: { id: string }) => i.id === c.id);
        expect(found, query).toBeDefined();
        seen.push(found.can_message as boolean);
      }
      return seen;
    };
    const star = await creator(t, { dm_policy: 'everyone', display_name: 'Xq Star' });
    const fanCreator = await creator(t, { dm_policy: 'nobody', display_name: 'Xz Fan' });
    const fan = fanCreator.account;
    expect(await listedAs(star, 'xq', fan)).toEqual([true, true, true, true]);
    await block(star.account, fan.userId);
    expect(await listedAs(star, 'xq', fan)).toEqual([false, false, false, false]);
    await unblock(star.account, fan.userId);
    await block(fan, star.id);
    expect(await listedAs(star, 'xq', fan)).toEqual([false, false, false, false]);
    await unblock(fan, star.id);

    // The star sees the fan's profile ('nobody'): a conversation the fan started with the star
    // lets the star answer, whatever the fan's policy.
    expect(await listedAs(fanCreator, 'xz', star.account)).toEqual([false, false, false, false]);
    const id = (await start(new ChatClient(t, fan), star.id)).json().conversation.id as string;
    expect(id).toBeTypeOf('string');
    expect(await listedAs(fanCreator, 'xz', star.account)).toEqual([true, true, true, true]);
    // And the fan sees the star as before: the conversation is not accepted, the policy allows.
    expect(await listedAs(star, 'xq', fan)).toEqual([true, true, true, true]);
  });

  it('directory can_message: a pending conversation does not lift the DM policy', async () => {
    const star = await creator(t, { dm_policy: 'everyone' });
    const fan = new ChatClient(t, await t.register());
    // An accepted conversation with someone else must not count for this star.
    const other = await creator(t, { dm_policy: 'everyone' });
    const accepted = (await start(fan, other.id)).json().conversation.id as string;
    await fan.sent(accepted, 'hi');
    await new ChatClient(t, other.account).sent(accepted, 'welcome');
    const id = (await start(fan, star.id)).json().conversation.id as string;
    await fan.sent(id, 'hello'); // not accepted: the influencer has not answered
    await new ChatClient(t, star.account).call('PATCH', '/api/influencers/me', {
      dm_policy: 'nobody',
    });
    expect((await profile(star, fan.account)).can_message).toBe(false);
    expect(await listed(star, fan.account)).toMatchObject({ id: star.id, can_message: false });
  });

  it('GET /api/blocks pages newest first with each account as its card', async () => {
    const me = await t.register();
    const blocked: string[] = [];
    for (let i = 0; i < 5; i++) {
      const other =
        i % 2 ? (await creator(t, { display_name: `Star ${i}` })).id : (await t.register()).userId;
      t.clock.advance(1_000);
      await block(me, other);
      blocked.push(other);
    }
    const seen: {
      user: { id: string; handle: string | null; name: string | null };
      blocked_at: string;
    }[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/api/blocks?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const body = (await t.call('GET', url, { token: me.accessToken })).json();
      seen.push(...body.blocks);
      cursor = body.next_cursor;
    } while (cursor !== null);
    expect(seen.map((b) => b.user.id)).toEqual([...blocked].reverse());
    expect(seen[1]?.user).toMatchObject({ name: 'Star 3' });
    expect(seen[1]?.user.handle).toMatch(/^c_/);
    expect(seen[0]?.user).toMatchObject({ name: null, handle: null });
    expect(Date.parse(seen[0]?.blocked_at as string)).toBeGreaterThan(
      Date.parse(seen[4]?.blocked_at as string),
    );
    const bad = await t.call('GET', '/api/blocks?cursor=nonsense', { token: me.accessToken });
    expect(errorOf(bad)).toEqual([400, 'invalid_cursor']);
  });
});
