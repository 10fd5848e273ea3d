import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp, type Account } from '../helpers/test-app.js';
import { creator, expectError, expectInvalid, follow, type Creator } from './support.js';

describe.each(backends)('follows ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const put = (account: Account, ref: string) => follow(t, account, ref);
  const remove = (account: Account, ref: string) =>
    t.call('DELETE', `/api/influencers/${ref}/follow`, { token: account.accessToken });
  const view = async (ref: string, account?: Account) =>
    (await t.call('GET', `/api/influencers/${ref}`, { token: account?.accessToken })).json()
      .influencer;

  /** The stored truth: follow rows of the profile, its count, and its facets' copies. */
  async function stored(influencerId: string) {
    const rows = await t.db
      .selectFrom('follows')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('influencer_id', '=', influencerId)
      .executeTakeFirstOrThrow();
    const profile = await t.db
      .selectFrom('influencer_profiles')
      .select('followers_count')
      .where('id', '=', influencerId)
      .executeTakeFirstOrThrow();
    const facets = await t.db
      .selectFrom('influencer_facets')
      .select('followers_count')
      .distinct()
      .where('influencer_id', '=', influencerId)
      .execute();
    return {
      rows: Number(rows.n),
      count: profile.followers_count,
      facetCounts: facets.map((f) => f.followers_count),
    };
  }

  describe('PUT and DELETE /api/influencers/{ref}/follow', () => {
    let star: Creator;
    beforeAll(async () => {
      star = await creator(t);
    });

    it('follow answers {following: true, followers_count}; repeating it changes nothing', async () => {
      const fan = await t.register();
      const first = await put(fan, star.handle);
      expect(first.statusCode).toBe(200);
      expect(first.json()).toEqual({ following: true, followers_count: 1 });
      const again = await put(fan, star.id);
      expect(again.json()).toEqual({ following: true, followers_count: 1 });
      expect(await stored(star.id)).toEqual({ rows: 1, count: 1, facetCounts: [1] });
      expect(await view(star.handle, fan)).toMatchObject({
        followers_count: 1,
        is_following: true,
      });
    });

    it('unfollow answers {following: false, followers_count}; repeating it changes nothing', async () => {
      const fan = await t.register();
      await put(fan, star.handle);
      const before = (await stored(star.id)).count;
      const first = await remove(fan, star.handle.toUpperCase());
      expect(first.statusCode).toBe(200);
      expect(first.json()).toEqual({ following: false, followers_count: before - 1 });
      const again = await remove(fan, star.id);
      expect(again.json()).toEqual({ following: false, followers_count: before - 1 });
      expect(await view(star.handle, fan)).toMatchObject({ is_following: false });
      const never = await remove(await t.register(), star.id);
      expect(never.json()).toEqual({ following: false, followers_count: before - 1 });
    });

    it('404 not_found for an unknown profile; 400 cannot_follow_self; 401 without a token', async () => {
      const fan = await t.register();
      for (const ref of ['00000000-0000-4000-8000-000000000000', 'no_such_handle', 'x']) {
        expectError(await put(fan, ref), 404, 'not_found');
        expectError(await remove(fan, ref), 404, 'not_found');
      }
      const body = expectError(await put(star.account, star.handle), 400, 'cannot_follow_self');
      expect(body.message).toBe('You cannot follow yourself.');
      expect((await stored(star.id)).rows).toBe((await stored(star.id)).count);
      expectError(await t.call('PUT', `/api/influencers/${star.id}/follow`), 401, 'unauthorized');
    });

    it('can_message follows the DM policy and the follow; never on one’s own profile', async () => {
      const fan = await t.register();
      const followersOnly = await creator(t, { dm_policy: 'followers' });
      const everyone = await creator(t, { dm_policy: 'everyone' });
      const nobody = await creator(t, { dm_policy: 'nobody' });
      expect((await view(followersOnly.id, fan)).can_message).toBe(false);
      expect((await view(everyone.id, fan)).can_message).toBe(true);
      expect((await view(nobody.id, fan)).can_message).toBe(false);
      for (const c of [followersOnly, everyone, nobody]) await put(fan, c.id);
      expect((await view(followersOnly.id, fan)).can_message).toBe(true);
      expect((await view(everyone.id, fan)).can_message).toBe(true);
      expect((await view(nobody.id, fan)).can_message).toBe(false);
      expect(await view(everyone.id, everyone.account)).toMatchObject({
        is_following: false,
        can_message: false,
      });
    });
  });

  describe('directory pages', () => {
    /** Every page of a listing, following next_cursor, as the fan sees it. */
    async function everyPage(query: string, account: Account) {
      type View = { id: string; is_following: boolean; can_message: boolean };
      const seen: View[] = [];
      let cursor: string | null = null;
      do {
        const url: string = `/api/influencers?${query}${cursor === null ? '' : `&cursor=${cursor}`}`;
        const response = await t.call('GET', url, { token: account.accessToken });
        const body = response.json() as { influencers: View[]; next_cursor: string | null };
        seen.push(...body.influencers);
        cursor = body.next_cursor;
      } while (cursor !== null);
      return seen;
    }

    it('say which profiles the caller follows, however the page was found', async () => {
      const fan = await t.register();
      const name = 'Zyxwvut Quillon';
      const listed: Creator[] = [];
      for (let i = 0; i < 12; i++) {
        listed.push(await creator(t, { display_name: name, categories: ['science'] }));
      }
      const followed = new Set(listed.filter((_, i) => i % 2 === 0).map((c) => c.id));
      for (const id of followed) await put(fan, id);
      // A category listing, a word-start prefix, and a substring found by the bounded walk of
      // the listing's index (limit 1: 12 matches are many for a page of 1) or by the substring
      // index (limit 100: too few to fill a page by walking).
      for (const query of ['category=science', 'q=zy', 'q=wvut&limit=1', 'q=wvut&limit=100']) {
        const seen = (await everyPage(query, fan)).filter((v) => listed.some((c) => c.id === v.id));
        expect(seen, query).toHaveLength(12);
        for (const view of seen) {
          const follows = followed.has(view.id);
          expect(view, query).toMatchObject({ is_following: follows, can_message: follows });
        }
      }
    });
  });

  describe('under concurrency', () => {
    it('50 different users following at once give exactly 50', async () => {
      const star = await creator(t);
      const fans = await Promise.all(Array.from({ length: 50 }, () => t.register()));
      const responses = await Promise.all(fans.map((fan) => put(fan, star.id)));
      expect(responses.every((r) => r.statusCode === 200)).toBe(true);
      expect(await stored(star.id)).toEqual({ rows: 50, count: 50, facetCounts: [50] });
    });

    it("one user's 10 concurrent PUTs give 1", async () => {
      const star = await creator(t);
      const fan = await t.register();
      const responses = await Promise.all(Array.from({ length: 10 }, () => put(fan, star.id)));
      expect(responses.map((r) => r.json())).toEqual(
        Array(10).fill({ following: true, followers_count: 1 }),
      );
      expect(await stored(star.id)).toEqual({ rows: 1, count: 1, facetCounts: [1] });
    });

    it('interleaved follows and unfollows end with the count equal to the rows', async () => {
      const star = await creator(t);
      const fans = await Promise.all(Array.from({ length: 12 }, () => t.register()));
      const calls = fans.flatMap((fan, i) =>
        Array.from({ length: 6 }, (_, j) =>
          (i + j) % 2 === 0 ? put(fan, star.id) : remove(fan, star.id),
        ),
      );
      const responses = await Promise.all(calls);
      expect(responses.every((r) => r.statusCode === 200)).toBe(true);
      const result = await stored(star.id);
      expect(result.count).toBe(result.rows);
      expect(result.facetCounts).toEqual([result.rows]);
    });
  });

  describe('against blocks and deletions, at once', () => {
    /** PostgreSQL's own count of deadlocks in this test database (SQLite has one writer). */
    const deadlocks = async () => {
      if (backend.name === 'sqlite') return 0;
      const { rows } = await sql<{
        deadlocks: string;
      }>`select deadlocks from pg_stat_database where datname = current_database()`.execute(t.db);
      return Number(rows[0]?.deadlocks);
    };

    it('an unfollow and a block of the same pair take their locks in one order: no deadlock', async () => {
      const before = await deadlocks();
      for (let i = 0; i < 10; i++) {
        const [a, b] = [await creator(t), await creator(t)];
        await put(a.account, b.id);
        await put(b.account, a.id);
        const answers = await Promise.all([
          remove(b.account, a.id),
          t.call('PUT', `/api/blocks/${b.id}`, { token: a.account.accessToken }),
        ]);
        expect(answers.map((r) => r.statusCode)).toEqual([200, 200]);
        expect(await stored(a.id)).toMatchObject({ rows: 0, count: 0 });
        expect(await stored(b.id)).toMatchObject({ rows: 0, count: 0 });
      }
      expect(await deadlocks()).toBe(before);
    });

    it.each(['/api/influencers/me', '/api/profile'])(
      'DELETE %s while its fans follow and unfollow answers 200, without a deadlock',
      async (path) => {
        const before = await deadlocks();
        const star = await creator(t);
        const fans = await Promise.all(Array.from({ length: 8 }, () => t.register()));
        for (const fan of fans) await put(fan, star.id);
        let deleted = false;
        const toggling = fans.map(async (fan) => {
          for (let n = 0; !deleted && n < 20; n++) {
            const answer = await (n % 2 === 0 ? remove(fan, star.id) : put(fan, star.id));
            if (answer.statusCode !== 200) return;
          }
        });
        await new Promise((resolve) => setTimeout(resolve, 20));
        const answer = await t.call('DELETE', path, {
          token: star.account.accessToken,
          body: path === '/api/profile' ? { password: star.account.password } : undefined,
        });
        deleted = true;
        await Promise.all(toggling);
        expect(answer.statusCode, answer.body).toBe(200);
        expect(await deadlocks()).toBe(before);
      },
    );
  });

  describe('the limit of 100 changes an hour', () => {
    it('the 101st change answers 429 rate_limited with Retry-After and changes nothing', async () => {
      const star = await creator(t);
      const fan = await t.register();
      for (let i = 0; i < 50; i++) {
        expect((await put(fan, star.id)).statusCode).toBe(200);
        expect((await put(fan, star.id)).statusCode).toBe(200); // no change: not counted
        expect((await remove(fan, star.id)).statusCode).toBe(200);
      }
      const refused = await put(fan, star.id);
      const body = expectError(refused, 429, 'rate_limited');
      expect(body.message).toMatch(/try again later/);
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(3600);
      expect(await stored(star.id)).toMatchObject({ rows: 0, count: 0 });
      // A call that would change nothing is still answered.
      expect((await remove(fan, star.id)).json()).toEqual({ following: false, followers_count: 0 });
      // Another user is not affected; and an hour later the user may change again.
      expect((await put(await t.register(), star.id)).statusCode).toBe(200);
      t.clock.advance(retryAfter * 1000);
      const later = await t.login(fan.email, fan.password); // the access token has expired
      expect((await put(later, star.id)).json()).toEqual({ following: true, followers_count: 2 });
    });
  });

  describe('GET /api/influencers/following', () => {
    it('lists followed profiles newest follow first, with followed_at, paged by cursor', async () => {
      const fan = await t.register();
      const stars = [];
      for (let i = 0; i < 5; i++) {
        const star = await creator(t, { dm_policy: i === 0 ? 'nobody' : 'followers' });
        await put(fan, star.id);
        stars.push(star);
        t.clock.advance(1_000);
      }
      const seen: {
        id: string;
        followed_at: string;
        is_following: boolean;
        can_message: boolean;
      }[] = [];
      let cursor: string | null = null;
      do {
        const url: string = `/api/influencers/following?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
        const response = await t.call('GET', url, { token: fan.accessToken });
        expect(response.statusCode).toBe(200);
        const body = response.json();
        expect(Object.keys(body).sort()).toEqual(['influencers', 'next_cursor']);
        seen.push(...body.influencers);
        cursor = body.next_cursor;
      } while (cursor !== null);
      expect(seen.map((i) => i.id)).toEqual(stars.map((s) => s.id).reverse());
      const times = seen.map((i) => Date.parse(i.followed_at));
      expect(times).toEqual([...times].sort((a, b) => b - a));
      expect(seen.every((i) => i.is_following)).toBe(true);
      expect(seen.map((i) => i.can_message)).toEqual([true, true, true, true, false]);
    });

    it('an empty list; 400 for a bad limit or cursor; 401 without a token', async () => {
      const fan = await t.register();
      const empty = await t.call('GET', '/api/influencers/following', { token: fan.accessToken });
      expect(empty.json()).toEqual({ influencers: [], next_cursor: null });
      expectInvalid(
        await t.call('GET', '/api/influencers/following?limit=101', { token: fan.accessToken }),
        'limit',
      );
      expectError(
        await t.call('GET', '/api/influencers/following?cursor=abc.def', {
          token: fan.accessToken,
        }),
        400,
        'invalid_cursor',
      );
      expectError(await t.call('GET', '/api/influencers/following'), 401, 'unauthorized');
    });

    it("another user's cursor is not valid for this list", async () => {
      const star = await creator(t);
      const other = await creator(t);
      const [a, b] = [await t.register(), await t.register()];
      for (const fan of [a, b]) for (const s of [star, other]) await put(fan, s.id);
      const cursor = (
        await t.call('GET', '/api/influencers/following?limit=1', { token: a.accessToken })
      ).json().next_cursor;
      const url = `/api/influencers/following?cursor=${cursor}`;
      expect((await t.call('GET', url, { token: a.accessToken })).statusCode).toBe(200);
      expectError(await t.call('GET', url, { token: b.accessToken }), 400, 'invalid_cursor');
    });
  });

  describe('GET /api/influencers/me/followers', () => {
    it('lists followers {id, name, avatar_url, followed_at} newest first, paged', async () => {
      const star = await creator(t);
      const fans: Account[] = [];
      for (let i = 0; i < 5; i++) {
        const fan = await t.register();
        await t.call('PATCH', '/api/profile', {
          token: fan.accessToken,
          body: { name: `Fan ${i}`, avatar_url: `https://x.test/${i}.png` },
        });
        await put(fan, star.id);
        fans.push(fan);
        t.clock.advance(1_000);
      }
      const seen: Record<string, unknown>[] = [];
      let cursor: string | null = null;
      do {
        const url: string = `/api/influencers/me/followers?limit=3${cursor ? `&cursor=${cursor}` : ''}`;
        const body = (await t.call('GET', url, { token: star.account.accessToken })).json();
        seen.push(...body.followers);
        cursor = body.next_cursor;
      } while (cursor !== null);
      expect(seen.map((f) => f.id)).toEqual(fans.map((f) => f.userId).reverse());
      expect(Object.keys(seen[0] as object).sort()).toEqual([
        'avatar_url',
        'followed_at',
        'id',
        'name',
      ]);
      expect(seen[0]).toMatchObject({ name: 'Fan 4', avatar_url: 'https://x.test/4.png' });
    });

    it('404 not_influencer without a profile; 400 invalid_cursor', async () => {
      const fan = await t.register();
      expectError(
        await t.call('GET', '/api/influencers/me/followers', { token: fan.accessToken }),
        404,
        'not_influencer',
      );
      const star = await creator(t);
      expectError(
        await t.call('GET', '/api/influencers/me/followers?cursor=x', {
          token: star.account.accessToken,
        }),
        400,
        'invalid_cursor',
      );
    });
  });

  it('the stored counts agree with the rows everywhere after all of the above', async () => {
    const mismatched = await sql<{ id: string }>`
      select p.id from influencer_profiles p
      where p.followers_count <> (select count(*) from follows f where f.influencer_id = p.id)
         or exists (select 1 from influencer_facets x
                    where x.influencer_id = p.id and x.followers_count <> p.followers_count)`.execute(
      t.db,
    );
    expect(mismatched.rows).toEqual([]);
  });
});

// The same lists when several follows share one instant: only the id orders them, and each page's
// cursor must continue in that order.
describe.each(backends)('follow lists with equal followed_at ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  async function pageAll(account: Account, path: string, key: string): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `${path}?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const response = await t.call('GET', url, { token: account.accessToken });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      ids.push(...body[key].map((row: { id: string }) => row.id));
      cursor = body.next_cursor;
    } while (cursor !== null);
    return ids;
  }

  it('GET /api/influencers/following yields every followed profile exactly once', async () => {
    const fan = await t.register();
    const stars = [];
    for (let i = 0; i < 5; i++) stars.push(await creator(t));
    const frozen = t.clock.freeze(); // every follow at one instant: only the id orders them
    try {
      for (const star of stars) expect((await follow(t, fan, star.id)).statusCode).toBe(200);
    } finally {
      frozen.thaw();
    }
    const seen = await pageAll(fan, '/api/influencers/following', 'influencers');
    expect(seen).toHaveLength(5);
    expect([...seen].sort()).toEqual(stars.map((s) => s.id).sort());
  });

  it('GET /api/influencers/me/followers yields every follower exactly once', async () => {
    const star = await creator(t);
    const fans: Account[] = [];
    for (let i = 0; i < 5; i++) fans.push(await t.register());
    const frozen = t.clock.freeze();
    try {
      for (const fan of fans) expect((await follow(t, fan, star.id)).statusCode).toBe(200);
    } finally {
      frozen.thaw();
    }
    const seen = await pageAll(star.account, '/api/influencers/me/followers', 'followers');
    expect(seen).toHaveLength(5);
    expect([...seen].sort()).toEqual(fans.map((f) => f.userId).sort());
  });
});
