import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteAccountRecords } from '../../src/accounts/deletion.js';
import { deleteInfluencerData } from '../../src/influencer/account-deletion.js';
import { backends } from '../helpers/backends.js';
import { TestApp, type Account } from '../helpers/test-app.js';
import { creator, expectError, follow } from './support.js';

describe.each(backends)('deleting profiles and accounts ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const put = (account: Account, ref: string) => follow(t, account, ref);
  const count = async (id: string) =>
    (await t.call('GET', `/api/influencers/${id}`)).json().influencer.followers_count as number;
  const following = async (account: Account) =>
    (await t.call('GET', '/api/influencers/following', { token: account.accessToken }))
      .json()
      .influencers.map((i: { id: string }) => i.id);
  const followRows = async (column: 'follower_id' | 'influencer_id', id: string) =>
    (await t.db.selectFrom('follows').selectAll().where(column, '=', id).execute()).length;

  it('deleting the influencer profile removes its follows (and only those)', async () => {
    const star = await creator(t);
    const other = await creator(t);
    const fans = await Promise.all([t.register(), t.register()]);
    for (const fan of fans) {
      await put(fan, star.id);
      await put(fan, other.id);
    }
    // The star, as a fan, follows someone too: that follow stays (the account stays).
    await put(star.account, other.id);

    const response = await t.call('DELETE', '/api/influencers/me', {
      token: star.account.accessToken,
    });
    expect(response.statusCode).toBe(200);
    expect(await followRows('influencer_id', star.id)).toBe(0);
    for (const fan of fans) expect(await following(fan)).toEqual([other.id]);
    expect(await following(star.account)).toEqual([other.id]);
    expect(await count(other.id)).toBe(3);
    const facets = await t.db
      .selectFrom('influencer_facets')
      .selectAll()
      .where('influencer_id', '=', star.id)
      .execute();
    expect(facets).toEqual([]);
    // Following it now: 404.
    expectError(await put(fans[0] as Account, star.id), 404, 'not_found');
  });

  it('deleting the account removes its profile and every follow of and by it, counts included', async () => {
    const leaving = await creator(t);
    const followed = await Promise.all([creator(t), creator(t)]);
    const fan = await t.register();
    for (const target of followed) {
      await put(leaving.account, target.id);
      await put(fan, target.id);
    }
    await put(fan, leaving.id);
    expect(await Promise.all(followed.map((c) => count(c.id)))).toEqual([2, 2]);

    const response = await t.call('DELETE', '/api/profile', {
      token: leaving.account.accessToken,
      body: { password: leaving.account.password },
    });
    expect(response.statusCode).toBe(200);
    expect(await Promise.all(followed.map((c) => count(c.id)))).toEqual([1, 1]);
    expect(await followRows('follower_id', leaving.id)).toBe(0);
    expect(await followRows('influencer_id', leaving.id)).toBe(0);
    expectError(await t.call('GET', `/api/influencers/${leaving.handle}`), 404, 'not_found');
    expect(await following(fan)).toEqual(followed.map((c) => c.id).reverse());
    const facetCounts = await t.db
      .selectFrom('influencer_facets')
      .select('followers_count')
      .distinct()
      .where(
        'influencer_id',
        'in',
        followed.map((c) => c.id),
      )
      .execute();
    expect(facetCounts.map((f) => f.followers_count)).toEqual([1]);
    // The handle is free again, for a new account.
    expect((await creator(t, { handle: leaving.handle })).handle).toBe(leaving.handle);
  });

  it('a wrong password deletes nothing', async () => {
    const leaving = await creator(t);
    const target = await creator(t);
    await put(leaving.account, target.id);
    const response = await t.call('DELETE', '/api/profile', {
      token: leaving.account.accessToken,
      body: { password: 'not the password' },
    });
    expectError(response, 400, 'incorrect_password');
    expect(await count(target.id)).toBe(1);
    expect((await t.call('GET', `/api/influencers/${leaving.id}`)).statusCode).toBe(200);
  });

  it('is one transaction: a group hook that fails leaves the account, its profile and counts as they were', async () => {
    const leaving = await creator(t);
    const target = await creator(t);
    await put(leaving.account, target.id);
    const failing = async () => {
      throw new Error('a later group failed');
    };
    await expect(
      deleteAccountRecords(t.db, leaving.id, [deleteInfluencerData, failing]),
    ).rejects.toThrow('a later group failed');
    expect(await count(target.id)).toBe(1);
    expect(await followRows('follower_id', leaving.id)).toBe(1);
    expect((await t.call('GET', `/api/influencers/${leaving.id}`)).statusCode).toBe(200);
    expect(
      (await t.call('GET', '/api/profile', { token: leaving.account.accessToken })).statusCode,
    ).toBe(200);
  });

  it('two accounts that follow each other can be deleted at the same moment', async () => {
    for (let round = 0; round < 3; round++) {
      const [a, b] = await Promise.all([creator(t), creator(t)]);
      const shared = await Promise.all([creator(t), creator(t), creator(t)]);
      await put(a.account, b.id);
      await put(b.account, a.id);
      for (const s of shared) {
        await put(a.account, s.id);
        await put(b.account, s.id);
      }
      const responses = await Promise.all(
        [a, b].map((c) =>
          t.call('DELETE', '/api/profile', {
            token: c.account.accessToken,
            body: { password: c.account.password },
          }),
        ),
      );
      expect(responses.map((r) => r.statusCode)).toEqual([200, 200]);
      expect(await Promise.all(shared.map((s) => count(s.id)))).toEqual([0, 0, 0]);
    }
  });
});
