import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { up } from '../../src/db/migrations/011_prefixes_after_spaces.js';
import { up as upTo012 } from '../../src/db/migrations/012_prefixes_after_apostrophes.js';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp, uniqueEmail } from '../helpers/test-app.js';
import { confirmedAccount, creator, expectError, expectInvalid, type Creator } from './support.js';

type Query = Record<string, string>;

function listUrl(query: Query): string {
  const search = new URLSearchParams(query).toString();
  return search === '' ? '/api/influencers' : `/api/influencers?${search}`;
}

/** The directory's search rules, on a directory of ten profiles chosen to tell the rules apart. */
describe.each(backends)('directory search rules ($name)', (backend) => {
  let t: TestApp;
  const byKey = new Map<string, Creator>();
  const PROFILES: [key: string, handle: string, name: string, categories: string[]][] = [
    ['quentin', 'zed_one', 'Quentin Xavier', ['music']],
    ['emile', 'p02', 'Émile Zola', ['art']],
    ['strasse', 'p03', 'Straße Müller', ['travel']],
    ['sofia', 'p04', 'ΣΟΦΊΑ Παπαδοπούλου', ['art', 'music']],
    ['logos', 'p05', 'Λόγος Πάνος', ['science']],
    ['maria', 'p06', 'Мария Иванова', ['food']],
    ['percent', 'p07', 'Percent 100% Real', ['comedy']],
    ['under', 'p08', 'Under_score Guy', ['comedy']],
    ['back', 'p09', 'Back\\slash Band', ['music']],
    ['abc', 'p10', 'Abc Def', ['tech']],
    ['dots', 'p11', 'Dr... Who 🔥🔥🔥', ['music', 'science']],
    ['underscores', 'ada___l', 'Ada L', ['tech']],
  ];

  beforeAll(async () => {
    t = await TestApp.start(backend);
    for (const [key, handle, display_name, categories] of PROFILES) {
      byKey.set(key, await creator(t, { handle, display_name, categories }));
    }
  });
  afterAll(() => t.close());

  async function found(query: Query): Promise<string[]> {
    const response = await t.call('GET', listUrl({ limit: '100', ...query }));
    expect(response.statusCode, response.body).toBe(200);
    const ids: string[] = response.json().influencers.map((i: { id: string }) => i.id);
    return PROFILES.map(([key]) => key)
      .filter((key) => ids.includes(byKey.get(key)?.id as string))
      .sort();
  }

  it('is_following is true exactly for the listed profiles the caller follows, on every kind of query', async () => {
    const fan = await t.register();
    const followed = [byKey.get('maria')?.id, byKey.get('abc')?.id] as string[];
    for (const id of followed) {
      const follow = await t.call('PUT', `/api/influencers/${id}/follow`, {
        token: fan.accessToken,
      });
      expect(follow.statusCode, follow.body).toBe(200);
    }
    // A facet walk, a prefix facet, a substring by the walk and by the index, a category.
    const queries: Query[] = [{}, { q: 'ма' }, { q: 'ива' }, { q: 'abc d' }, { category: 'food' }];
    for (const query of queries) {
      const response = await t.call('GET', listUrl({ limit: '100', ...query }), {
        token: fan.accessToken,
      });
      const listed: { id: string; is_following: boolean }[] = response.json().influencers;
      expect(listed.length, JSON.stringify(query)).toBeGreaterThan(0);
      for (const influencer of listed) {
        expect(influencer.is_following, JSON.stringify(query)).toBe(
          followed.includes(influencer.id),
        );
      }
    }
  });

  it('without q, lists everyone', async () => {
    expect(await found({})).toHaveLength(PROFILES.length);
  });

  it('1–2 characters match the start of the handle or of a word of the display name', async () => {
    expect(await found({ q: 'xa' })).toEqual(['quentin']); // second word
    expect(await found({ q: 'Q' })).toEqual(['quentin']); // first word, any case
    expect(await found({ q: 'ze' })).toEqual(['quentin']); // the handle zed_one
    expect(await found({ q: 'z' })).toEqual(['emile', 'quentin']); // Zola, zed_one
    expect(await found({ q: 'sc' })).toEqual([]); // inside Under_score, not a word start
    expect(await found({ q: 'en' })).toEqual([]); // inside Quentin
    expect(await found({ q: 'd_' })).toEqual([]); // inside zed_one
    expect(await found({ q: ' π ' })).toEqual(['logos', 'sofia']); // trimmed; Παπαδοπούλου, Πάνος
  });

  it('3 or more characters match anywhere in the handle or the display name', async () => {
    expect(await found({ q: 'ent' })).toEqual(['percent', 'quentin']);
    expect(await found({ q: 'd_o' })).toEqual(['quentin']); // zed_one
    expect(await found({ q: 'avier' })).toEqual(['quentin']);
  });

  it('"1–100 code points after trimming": any amount of white space around q is trimmed first', async () => {
    const padding = ' '.repeat(500);
    expect(await found({ q: `${padding}avier${padding}` })).toEqual(['quentin']);
    expect(await found({ q: `${padding}${'😀'.repeat(100)}\t` })).toEqual([]);
  });

  it('takes a tab or line break inside q (a name pasted from elsewhere) as a space', async () => {
    expect(await found({ q: 'quentin\txavier' })).toEqual(['quentin']);
    expect(await found({ q: 'quentin\r\n xavier' })).toEqual([]); // two spaces: not in the name
    expect(await found({ q: 'abc\ndef' })).toEqual(['abc']);
  });

  it('is Unicode case-insensitive: é finds É, ß is ss, Greek and Cyrillic fold', async () => {
    expect(await found({ q: 'émile' })).toEqual(['emile']);
    expect(await found({ q: 'ÉMILE' })).toEqual(['emile']);
    expect(await found({ q: 'STRASSE' })).toEqual(['strasse']);
    expect(await found({ q: 'straße' })).toEqual(['strasse']);
    expect(await found({ q: 'RAẞE' })).toEqual(['strasse']); // capital sharp s
    expect(await found({ q: 'σοφία' })).toEqual(['sofia']);
    expect(await found({ q: 'ΛΌΓΟΣ' })).toEqual(['logos']); // final sigma is sigma
    expect(await found({ q: 'λογοσ' })).toEqual(['logos']);
    expect(await found({ q: 'МАРИЯ' })).toEqual(['maria']);
    expect(await found({ q: 'иван' })).toEqual(['maria']);
  });

  it('ignores accents (the folding decision in the README)', async () => {
    expect(await found({ q: 'emile' })).toEqual(['emile']);
    expect(await found({ q: 'muller' })).toEqual(['strasse']);
    expect(await found({ q: 'σοφια' })).toEqual(['sofia']);
  });

  it('treats %, _ and \\ as ordinary characters', async () => {
    expect(await found({ q: '100%' })).toEqual(['percent']);
    expect(await found({ q: '0% r' })).toEqual(['percent']);
    expect(await found({ q: 'r_s' })).toEqual(['under']);
    expect(await found({ q: 'k\\s' })).toEqual(['back']);
    expect(await found({ q: 'a%c' })).toEqual([]); // would match "Abc" as a LIKE wildcard
    expect(await found({ q: 'a_c' })).toEqual([]);
    expect(await found({ q: '%%%' })).toEqual([]);
    expect(await found({ q: '\\\\\\' })).toEqual([]);
    expect(await found({ q: '"x"' })).toEqual([]); // an FTS5 phrase quote is literal too
  });

  it('a query of symbols alone (no letter or digit) matches anywhere, like any other', async () => {
    expect(await found({ q: '...' })).toEqual(['dots']);
    expect(await found({ q: '🔥🔥🔥' })).toEqual(['dots']);
    expect(await found({ q: '🔥🔥🔥🔥' })).toEqual([]);
    expect(await found({ q: '.. 🔥' })).toEqual([]);
    expect(await found({ q: '___' })).toEqual(['underscores']);
    expect(await found({ q: '_ _' })).toEqual([]);
    expect(await found({ q: '...', category: 'science' })).toEqual(['dots']);
    expect(await found({ q: '...', category: 'tech' })).toEqual([]);
  });

  it('category: only profiles in it, with or without q', async () => {
    expect(await found({ category: 'music' })).toEqual(['back', 'dots', 'quentin', 'sofia']);
    expect(await found({ category: 'music', q: 'σο' })).toEqual(['sofia']);
    expect(await found({ category: 'art', q: 'σο' })).toEqual(['sofia']);
    expect(await found({ category: 'art', q: 'zola' })).toEqual(['emile']);
    expect(await found({ category: 'music', q: 'zola' })).toEqual([]);
    expect(await found({ category: 'beauty' })).toEqual([]);
  });

  it('category with a 1–2 character q: only the profiles in that category', async () => {
    // Both prefixes start handles in many categories: only the category filter narrows them.
    expect(await found({ q: 'p0' })).toEqual([
      'back',
      'emile',
      'logos',
      'maria',
      'percent',
      'sofia',
      'strasse',
      'under',
    ]);
    expect(await found({ q: 'p0', category: 'comedy' })).toEqual(['percent', 'under']);
    expect(await found({ q: 'p', category: 'travel' })).toEqual(['strasse']);
  });

  it('400 validation_failed for a bad q, category, sort or limit (never a 500)', async () => {
    const bad: [Query, string][] = [
      [{ q: '' }, 'q'],
      [{ q: '   ' }, 'q'],
      [{ q: 'x'.repeat(101) }, 'q'],
      [{ q: 'a\u0000b' }, 'q'],
      [{ category: 'cooking' }, 'category'],
      [{ category: 'Music' }, 'category'],
      [{ sort: 'oldest' }, 'sort'],
      [{ sort: '' }, 'sort'],
      [{ limit: '0' }, 'limit'],
      [{ limit: '101' }, 'limit'],
      [{ limit: '1000' }, 'limit'],
      [{ limit: '99999999999999999999' }, 'limit'],
      [{ limit: '-1' }, 'limit'],
      [{ limit: '1.5' }, 'limit'],
      [{ limit: '1e2' }, 'limit'],
      [{ limit: '01' }, 'limit'],
      [{ limit: ' 5' }, 'limit'],
      [{ limit: 'ten' }, 'limit'],
      [{ limit: '' }, 'limit'],
    ];
    for (const [query, field] of bad) {
      const response = await t.call('GET', listUrl(query));
      expectInvalid(response, field);
    }
    expectInvalid(await t.call('GET', '/api/influencers?limit=1&limit=2'), 'limit');
    expectInvalid(await t.call('GET', '/api/influencers?q=a&q=b'), 'q');
    const longest = await t.call('GET', listUrl({ q: '😀'.repeat(100), limit: '100' }));
    expect(longest.statusCode).toBe(200);
  });

  it('limit: default 20, at most 100', async () => {
    expect((await t.call('GET', listUrl({ limit: '1' }))).json().influencers).toHaveLength(1);
    expect((await t.call('GET', listUrl({ limit: '100' }))).json().influencers).toHaveLength(
      PROFILES.length,
    );
  });

  it('anonymous requests share the per-IP budget of the Auth group (300 a minute)', async () => {
    const ip = randomIp();
    for (let i = 0; i < 299; i++) {
      const url = i % 3 === 0 ? '/api/influencers/categories' : listUrl({ q: 'ab' });
      expect((await t.call('GET', url, { ip })).statusCode).toBe(200);
    }
    const forgot = await t.post('/api/forgot-password', { email: uniqueEmail() }, { ip });
    expect(forgot.statusCode).toBe(200); // the 300th, from the Auth group
    const refused = await t.call('GET', listUrl({}), { ip });
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // With a bearer token, the budget does not apply.
    const account = await t.register();
    const signedIn = await t.call('GET', listUrl({}), { ip, token: account.accessToken });
    expect(signedIn.statusCode).toBe(200);
  });

  it('is_following and can_message only with a valid bearer token', async () => {
    const fan = await t.register();
    const anonymous = (await t.call('GET', listUrl({}))).json().influencers;
    for (const influencer of anonymous) {
      expect(influencer).not.toHaveProperty('is_following');
      expect(influencer).not.toHaveProperty('can_message');
    }
    const signedIn = (await t.call('GET', listUrl({}), { token: fan.accessToken })).json();
    for (const influencer of signedIn.influencers) {
      expect(influencer).toMatchObject({ is_following: false, can_message: false });
    }
    const forged = `${fan.accessToken.slice(0, -4)}AAAA`;
    expectError(await t.call('GET', listUrl({}), { token: forged }), 401, 'unauthorized');
  });
});

/** Sorts, tie-breaks and cursors, on profiles whose order is known. */
describe.each(backends)('directory order and cursors ($name)', (backend) => {
  let t: TestApp;
  let profiles: { id: string; name: string; followers: number; createdAt: number }[];

  beforeAll(async () => {
    t = await TestApp.start(backend);
    const names = ['bob', 'Alice', 'émile', 'ALICE', 'Zoë', 'alice', 'Ålborg', 'carl'];
    const followers = [2, 0, 2, 1, 0, 2, 3, 0];
    profiles = [];
    for (const [i, name] of names.entries()) {
      const c = await creator(t, { display_name: name, categories: ['music'] });
      profiles.push({
        id: c.id,
        name,
        followers: followers[i] as number,
        createdAt: t.clock.now(),
      });
      t.clock.advance(1_000);
    }
    const fans = await Promise.all([0, 1, 2].map(() => confirmedAccount(t)));
    for (const p of profiles) {
      for (const fan of fans.slice(0, p.followers)) {
        await t.call('PUT', `/api/influencers/${p.id}/follow`, { token: fan.accessToken });
      }
    }
  });
  afterAll(() => t.close());

  const fold = (name: string) =>
    name
      .normalize('NFD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase();
  const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

  /** Every page of `query` at `limit`, following next_cursor. */
  async function pages(query: Query, limit: number): Promise<string[][]> {
    const result: string[][] = [];
    let cursor: string | undefined;
    do {
      const response = await t.call(
        'GET',
        listUrl({ ...query, limit: String(limit), ...(cursor && { cursor }) }),
      );
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      result.push(body.influencers.map((i: { id: string }) => i.id));
      cursor = body.next_cursor ?? undefined;
    } while (cursor !== undefined);
    return result;
  }

  it('popular (the default): followers_count descending, ties by id descending', async () => {
    const expected = [...profiles]
      .sort((a, b) => b.followers - a.followers || byId(b, a))
      .map((p) => p.id);
    expect((await pages({}, 100)).flat()).toEqual(expected);
    expect((await pages({ sort: 'popular' }, 3)).flat()).toEqual(expected);
    const counts = (await t.call('GET', listUrl({})))
      .json()
      .influencers.map((i: { followers_count: number }) => i.followers_count);
    expect(counts).toEqual([3, 2, 2, 2, 1, 0, 0, 0]);
  });

  it('newest: created_at descending', async () => {
    const expected = [...profiles].reverse().map((p) => p.id);
    expect((await pages({ sort: 'newest' }, 3)).flat()).toEqual(expected);
  });

  it('name: case- and accent-insensitive ascending, ties by id ascending', async () => {
    const expected = [...profiles]
      .sort((a, b) =>
        fold(a.name) < fold(b.name) ? -1 : fold(a.name) > fold(b.name) ? 1 : byId(a, b),
      )
      .map((p) => p.id);
    expect((await pages({ sort: 'name' }, 2)).flat()).toEqual(expected);
    expect(fold('Ålborg')).toBe('alborg');
  });

  it('pages at any limit find every profile exactly once; next_cursor is null on the last page', async () => {
    const all = (await pages({}, 100)).flat();
    for (const limit of [1, 2, 3, 7, 8, 9]) {
      const paged = await pages({}, limit);
      expect(paged.flat()).toEqual(all);
      expect(paged.every((page, i) => page.length === limit || i === paged.length - 1)).toBe(true);
    }
    const last = (await t.call('GET', listUrl({ limit: '8' }))).json();
    expect(last.next_cursor).toBeNull();
  });

  describe('cursors', () => {
    let cursor: string;
    beforeAll(async () => {
      cursor = (await t.call('GET', listUrl({ q: 'ali', sort: 'name', limit: '1' }))).json()
        .next_cursor;
      expect(typeof cursor).toBe('string');
    });

    const withCursor = (query: Query, value: string) =>
      t.call('GET', listUrl({ ...query, cursor: value }));

    it('is accepted with the same q, category and sort, at another limit', async () => {
      const response = await withCursor({ q: 'ali', sort: 'name', limit: '5' }, cursor);
      expect(response.statusCode).toBe(200);
      expect(response.json().influencers).toHaveLength(2); // Alice, ALICE, alice: 1 seen
    });

    it('altered anywhere, or forged: 400 invalid_cursor', async () => {
      const [payload, mac] = cursor.split('.') as [string, string];
      const flip = (text: string, at: number) =>
        text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
      const forgedPayload = Buffer.from(JSON.stringify(['a', '0'])).toString('base64url');
      for (const altered of [
        `${flip(payload, 0)}.${mac}`,
        `${flip(payload, payload.length - 1)}.${mac}`,
        `${payload}.${flip(mac, 0)}`,
        `${payload}.${flip(mac, mac.length - 1)}`,
        `${payload}.${mac}.x`,
        `${payload}.`,
        payload,
        `${forgedPayload}.${mac}`,
        `${'A'.repeat(9000)}${payload}.${mac}`, // overlong: refused as altered, not as a bad field
        'not-a-cursor',
        '',
        '...',
        '%',
      ]) {
        const body = expectError(
          await withCursor({ q: 'ali', sort: 'name' }, altered),
          400,
          'invalid_cursor',
        );
        expect(body.message).toBe('The cursor is invalid, or belongs to a different query.');
      }
    });

    it('with another q, category or sort: 400 invalid_cursor', async () => {
      const others: Query[] = [
        { q: 'alic', sort: 'name' },
        { q: 'ALI', sort: 'name' },
        { sort: 'name' },
        { q: 'ali' },
        { q: 'ali', sort: 'popular' },
        { q: 'ali', sort: 'newest' },
        { q: 'ali', sort: 'name', category: 'music' },
      ];
      for (const query of others) {
        expectError(await withCursor(query, cursor), 400, 'invalid_cursor');
      }
    });

    it('from popular used with newest (and back), both numeric keysets: 400 invalid_cursor', async () => {
      // A name cursor carries a string, which a numeric sort refuses by itself; these two carry a
      // number each, so only the binding to `sort` tells them apart.
      for (const [from, to] of [
        ['popular', 'newest'],
        ['newest', 'popular'],
      ] as const) {
        const page = await t.call('GET', listUrl({ q: 'ali', sort: from, limit: '1' }));
        const numeric = page.json().next_cursor as string;
        expect(typeof numeric).toBe('string');
        expect((await withCursor({ q: 'ali', sort: from }, numeric)).statusCode).toBe(200);
        expectError(await withCursor({ q: 'ali', sort: to }, numeric), 400, 'invalid_cursor');
      }
    });

    it('from another list (following) is not a directory cursor', async () => {
      const fan = await confirmedAccount(t);
      for (const p of profiles.slice(0, 2)) {
        await t.call('PUT', `/api/influencers/${p.id}/follow`, { token: fan.accessToken });
      }
      const following = await t.call('GET', '/api/influencers/following?limit=1', {
        token: fan.accessToken,
      });
      const foreign = following.json().next_cursor as string;
      expectError(await withCursor({}, foreign), 400, 'invalid_cursor');
    });
  });
});

/** The search structures follow every change of a profile, in the same transaction. */
describe.each(backends)('directory after changes ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const ids = async (query: Query) =>
    (await t.call('GET', listUrl(query))).json().influencers.map((i: { id: string }) => i.id);

  it('a changed name, handle or categories is found by the new and not the old', async () => {
    const c = await creator(t, {
      handle: 'old_handle',
      display_name: 'Wilhelmina Oldname!!!',
      categories: ['art'],
    });
    const fan = await confirmedAccount(t);
    await t.call('PUT', `/api/influencers/${c.id}/follow`, { token: fan.accessToken });
    expect(await ids({ q: 'oldname' })).toEqual([c.id]);
    expect(await ids({ q: '!!!' })).toEqual([c.id]);
    const patched = await t.call('PATCH', '/api/influencers/me', {
      token: c.account.accessToken,
      body: { handle: 'new_handle', display_name: 'Gertrude Newname???', categories: ['food'] },
    });
    expect(patched.statusCode).toBe(200);
    const gone: Query[] = [
      { q: 'oldname' },
      { q: 'ol' },
      { q: 'old_h' },
      { q: 'wi' },
      { q: '!!!' },
      { category: 'art' },
    ];
    for (const query of gone) {
      expect(await ids(query), JSON.stringify(query)).toEqual([]);
    }
    const found: Query[] = [
      { q: 'newname' },
      { q: 'ne' },
      { q: 'ge' },
      { q: 'new_h' },
      { category: 'food' },
      { category: 'food', q: 'tru' },
      { q: '???' },
    ];
    for (const query of found) {
      expect(await ids(query), JSON.stringify(query)).toEqual([c.id]);
    }
    // The listing still knows its followers (the facets were rebuilt with the count).
    const listed = (await t.call('GET', listUrl({ category: 'food' }))).json().influencers[0];
    expect(listed.followers_count).toBe(1);
  });

  it('a changed handle alone is found by the new and not the old, at 1–2 characters too', async () => {
    // A category no other test here lists.
    const c = await creator(t, {
      handle: 'qj_first',
      display_name: 'Yvette Person',
      categories: ['travel'],
    });
    expect(await ids({ q: 'qj' })).toEqual([c.id]);
    const patched = await t.call('PATCH', '/api/influencers/me', {
      token: c.account.accessToken,
      body: { handle: 'kx_second' },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    for (const q of ['qj', 'q', 'qj_first']) expect(await ids({ q }), q).toEqual([]);
    for (const q of ['kx', 'k', 'kx_second', 'x_sec']) expect(await ids({ q }), q).toEqual([c.id]);
  });

  it('a deleted profile is found no more', async () => {
    const c = await creator(t, { display_name: 'Evanescent Person', categories: ['music'] });
    expect(await ids({ q: 'evanescent' })).toEqual([c.id]);
    await t.call('DELETE', '/api/influencers/me', { token: c.account.accessToken });
    const gone: Query[] = [{ q: 'evanescent' }, { q: 'ev' }, { category: 'music' }];
    for (const query of gone) {
      expect(await ids(query)).toEqual([]);
    }
  });
});

describe.each(backends)(
  'directory words after spaces and joiners, migrations 011 and 012 ($name)',
  (backend) => {
    let t: TestApp;
    beforeAll(async () => {
      t = await TestApp.start(backend);
    });
    afterAll(() => t.close());

    const ids = async (q: string) => {
      const response = await t.call('GET', listUrl({ q, limit: '100' }));
      expect(response.statusCode, response.body).toBe(200);
      return response.json().influencers.map((i: { id: string }) => i.id);
    };

    it('1–2 characters find a word that starts with #, @ or an emoji after a space', async () => {
      const tagged = await creator(t, { display_name: 'I love #music' });
      const mention = await creator(t, { display_name: 'Follow @ada' });
      const fire = await creator(t, { display_name: 'Hot 🔥 Takes' });
      expect(await ids('#m')).toEqual([tagged.id]);
      expect(await ids('@a')).toEqual([mention.id]);
      expect(await ids('🔥')).toEqual([fire.id]);
    });

    it('1–2 characters whose folding is longer (æs is aes, ßa is ssa) match word starts only', async () => {
      const aesop = await creator(t, { display_name: 'Æsop Tales' });
      const haesler = await creator(t, { display_name: 'Haesler Studio' });
      const ssandra = await creator(t, { display_name: 'Ssandra Fox' });
      const glassa = await creator(t, { display_name: 'Glassa Works' });
      expect(await ids('æs')).toEqual([aesop.id]);
      expect(await ids('ÆS')).toEqual([aesop.id]);
      expect(await ids('ßa')).toEqual([ssandra.id]);
      expect((await ids('aes')).sort()).toEqual([aesop.id, haesler.id].sort()); // 3: anywhere
      expect((await ids('ssa')).sort()).toEqual([glassa.id, ssandra.id].sort());
    });

    it('1–2 characters find a word joined to the one before by an apostrophe, period, colon or middle dot', async () => {
      const ecole = await creator(t, { display_name: 'L’École Normale' });
      const oneil = await creator(t, { display_name: "Shaq O'Neil" });
      const ada = await creator(t, { display_name: 'Ada.Quokka' });
      const jane = await creator(t, { display_name: 'Mary·Jane: Notes' });
      const pi = await creator(t, { display_name: 'Pi 3.14159 Club' });
      expect(await ids('ec')).toEqual([ecole.id]);
      expect(await ids('ÉC')).toEqual([ecole.id]);
      expect(await ids('ne')).toEqual(expect.arrayContaining([oneil.id]));
      expect(await ids('qu')).toEqual([ada.id]);
      expect(await ids('ja')).toEqual([jane.id]);
      expect(await ids('14')).not.toContain(pi.id); // a digit after "." does not start a word
    });

    it.each([
      { migration: '011', up, name: 'Cats & #dogs', lacked: ['p:#', 'p:#d', 'p:&'], q: '#d' },
      { migration: '012', up: upTo012, name: 'Café d’Orsay', lacked: ['p:o', 'p:or'], q: 'or' },
    ])(
      '$migration lists existing profiles under the prefixes they lack, as the service lists new ones',
      async ({ up: migrate, name, lacked, q }) => {
        const made = await creator(t, { display_name: name });
        const prefixes = () =>
          t.db
            .selectFrom('influencer_facets')
            .select('facet')
            .where('influencer_id', '=', made.id)
            .where('facet', 'like', 'p:%')
            .orderBy('facet')
            .execute();
        const written = await prefixes();
        expect(written.map((row) => row.facet)).toEqual(expect.arrayContaining(lacked));
        await t.db
          .deleteFrom('influencer_facets')
          .where('influencer_id', '=', made.id)
          .where('facet', 'in', lacked)
          .execute();
        expect(await ids(q)).toEqual([]);
        // In a transaction, as the Migrator runs it on PostgreSQL (it locks the profiles for its span).
        await t.db.transaction().execute((trx) => migrate(trx as unknown as Kysely<unknown>));
        expect(await prefixes()).toEqual(written);
        expect(await ids(q)).toEqual([made.id]);
      },
    );
  },
);
