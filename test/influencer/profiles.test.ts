import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp, type Account } from '../helpers/test-app.js';
import {
  confirmedAccount,
  creator,
  expectError,
  expectInvalid,
  hasProfileRow,
  uniqueHandle,
} from './support.js';

const INFLUENCER_FIELDS = [
  'avatar_url',
  'bio',
  'categories',
  'created_at',
  'display_name',
  'dm_policy',
  'followers_count',
  'handle',
  'id',
  'links',
  'updated_at',
];
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe.each(backends)('influencer profiles ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const create = (account: Account, body: Record<string, unknown>) =>
    t.post('/api/influencers', body, { token: account.accessToken });
  const valid = (fields: Record<string, unknown> = {}) => ({
    handle: uniqueHandle(),
    display_name: 'Ada Lovelace',
    categories: ['science'],
    ...fields,
  });
  const mine = (account: Account) =>
    t.call('GET', '/api/influencers/me', { token: account.accessToken });
  const patch = (account: Account, body: unknown) =>
    t.call('PATCH', '/api/influencers/me', { token: account.accessToken, body });

  describe('POST /api/influencers', () => {
    it('answers 201 {message, influencer} with every field, defaults applied', async () => {
      const account = await confirmedAccount(t);
      const handle = uniqueHandle('ada');
      const response = await create(account, {
        handle,
        display_name: 'Ada Lovelace',
        categories: ['science', 'tech'],
      });
      expect(response.statusCode).toBe(201);
      const body = response.json();
      expect(Object.keys(body).sort()).toEqual(['influencer', 'message']);
      expect(body.message).toBe('Influencer profile created');
      // A bearer token came with the request, so the per-caller fields are there too.
      expect(Object.keys(body.influencer).sort()).toEqual(
        [...INFLUENCER_FIELDS, 'can_message', 'is_following'].sort(),
      );
      expect(body.influencer).toMatchObject({
        id: account.userId,
        handle,
        display_name: 'Ada Lovelace',
        bio: null,
        avatar_url: null,
        categories: ['science', 'tech'],
        links: [],
        dm_policy: 'followers',
        followers_count: 0,
        is_following: false,
        can_message: false,
      });
      expect(body.influencer.created_at).toMatch(ISO_UTC);
      expect(body.influencer.updated_at).toBe(body.influencer.created_at);
    });

    it('stores every optional field', async () => {
      const account = await confirmedAccount(t);
      const fields = {
        bio: 'Poet of science.\nFirst programmer.',
        avatar_url: 'https://cdn.example.test/ada.png',
        links: [{ label: 'Site', url: 'https://ada.example.test/' }],
        dm_policy: 'everyone',
      };
      expect((await create(account, valid(fields))).statusCode).toBe(201);
      expect((await mine(account)).json().influencer).toMatchObject(fields);
    });

    it('403 email_not_confirmed for an account whose address is not confirmed', async () => {
      const account = await t.register();
      const body = expectError(await create(account, valid()), 403, 'email_not_confirmed');
      expect(body.message).toMatch(/confirm/i);
      expectError(await mine(account), 404, 'not_influencer');
    });

    it('409 already_influencer for a second profile of one account', async () => {
      const { account } = await creator(t);
      const body = expectError(await create(account, valid()), 409, 'already_influencer');
      expect(body.message).toBe('This account already has an influencer profile.');
    });

    it('401 without a bearer token', async () => {
      expectError(await t.post('/api/influencers', valid()), 401, 'unauthorized');
    });

    it('handle: lower-cased (Ada_L is stored and shown as ada_l)', async () => {
      const account = await confirmedAccount(t);
      const handle = uniqueHandle('Ada_L');
      const response = await create(account, valid({ handle }));
      expect(response.json().influencer.handle).toBe(handle.toLowerCase());
      expect((await mine(account)).json().influencer.handle).toBe(handle.toLowerCase());
    });

    it('handle: unique whatever the case (409 handle_taken)', async () => {
      const first = await creator(t, { handle: uniqueHandle('taken') });
      const other = await confirmedAccount(t);
      const body = expectError(
        await create(other, valid({ handle: first.handle.toUpperCase() })),
        409,
        'handle_taken',
      );
      expect(body.message).toBe('This handle is taken.');
      expectError(await mine(other), 404, 'not_influencer');
    });

    it('handle: me, following and categories are reserved (409 handle_taken)', async () => {
      const account = await confirmedAccount(t);
      for (const handle of ['me', 'ME', 'following', 'Categories']) {
        expectError(await create(account, valid({ handle })), 409, 'handle_taken');
      }
      expectError(await mine(account), 404, 'not_influencer');
    });

    it('handle: 3–30 of a–z, 0–9 and _', async () => {
      const account = await confirmedAccount(t);
      for (const handle of ['ab', 'a'.repeat(31), 'ada-l', 'ada l', 'adé', 'ada.l', '', 42]) {
        expectInvalid(await create(account, valid({ handle })), 'handle');
      }
      const longest = uniqueHandle().padEnd(30, '9');
      expect((await create(account, valid({ handle: longest }))).statusCode).toBe(201);
    });

    it('display_name: trimmed and NFC-normalised', async () => {
      const account = await confirmedAccount(t);
      const decomposed = '  Zoe\u0308 Dubois \t';
      const response = await create(account, valid({ display_name: decomposed }));
      expect(response.json().influencer.display_name).toBe('Zo\u00eb Dubois');
    });

    it('display_name: 1–50 code points after trimming and NFC', async () => {
      const account = await confirmedAccount(t);
      for (const display_name of ['', '   ', 'x'.repeat(51), '😀'.repeat(51)]) {
        expectInvalid(await create(account, valid({ display_name })), 'display_name');
      }
      // 50 astral characters are 100 UTF-16 units; 50 e + combining accent become 50 after NFC.
      const other = await confirmedAccount(t);
      expect((await create(other, valid({ display_name: '😀'.repeat(50) }))).statusCode).toBe(201);
      const third = await confirmedAccount(t);
      const composed = 'e\u0301'.repeat(50);
      expect((await create(third, valid({ display_name: composed }))).statusCode).toBe(201);
    });

    it('display_name: no control characters', async () => {
      const account = await confirmedAccount(t);
      for (const display_name of [
        'Ada\u0000',
        'Ada\nLovelace',
        'Ada\u001b',
        'Ada\u007f',
        'A\u0085',
      ]) {
        expectInvalid(await create(account, valid({ display_name })), 'display_name');
      }
      expectError(await mine(account), 404, 'not_influencer');
    });

    it('categories: 1–3 distinct slugs of the fixed list', async () => {
      const account = await confirmedAccount(t);
      for (const categories of [
        [],
        ['music', 'art', 'tech', 'food'],
        ['music', 'music'],
        ['musik'],
        ['Music'],
        'music',
        [1],
      ]) {
        expectInvalid(await create(account, valid({ categories })), 'categories');
      }
      expectInvalid(
        await create(account, { handle: uniqueHandle(), display_name: 'X' }),
        'categories',
      );
      const three = ['music', 'art', 'other'];
      expect(
        (await create(account, valid({ categories: three }))).json().influencer.categories,
      ).toEqual(three);
    });

    it('links: at most 5 {label, url}, label 1–30 characters, url https', async () => {
      const account = await confirmedAccount(t);
      const link = { label: 'Site', url: 'https://example.test/' };
      for (const links of [
        Array(6).fill(link),
        [{ label: '', url: link.url }],
        [{ label: 'x'.repeat(31), url: link.url }],
        [{ label: 'Site\u0007', url: link.url }],
        [{ label: 'Site', url: 'http://example.test/' }],
        [{ label: 'Site' }],
        [{ url: link.url }],
        ['https://example.test/'],
        {},
      ]) {
        expectInvalid(await create(account, valid({ links })), 'links');
      }
      const five = Array.from({ length: 5 }, (_, i) => ({
        label: ` Link ${i} `,
        url: `https://example.test/${i}`,
        extra: 'ignored',
      }));
      const response = await create(account, valid({ links: five }));
      expect(response.statusCode).toBe(201);
      expect(response.json().influencer.links).toEqual(
        five.map(({ label, url }) => ({ label: label.trim(), url })),
      );
    });

    it('avatar_url: an https URL of at most 2048 characters, without credentials', async () => {
      const account = await confirmedAccount(t);
      for (const avatar_url of [
        'http://cdn.example.test/a.png',
        'javascript:alert(1)',
        'ftp://cdn.example.test/a.png',
        'cdn.example.test/a.png',
        'https://',
        'https://user:secret@cdn.example.test/a.png',
        'https://cdn.example.test/a b.png',
        'https://cdn.example.test/a\u0000.png',
        'https:cdn.example.test/a.png',
        'https://good.test\\@evil.test/a.png',
        `https://cdn.example.test/${'a'.repeat(2030)}`,
      ]) {
        expectInvalid(await create(account, valid({ avatar_url })), 'avatar_url');
      }
      const longest = `https://cdn.example.test/${'a'.repeat(2048 - 25)}`;
      expect(longest).toHaveLength(2048);
      expect((await create(account, valid({ avatar_url: longest }))).statusCode).toBe(201);
    });

    it("bio: the account's rule, one answer for both (line breaks and tabs, no other control)", async () => {
      const account = await confirmedAccount(t);
      for (const bio of ['a\u0007b', 'a\u007fb', 'a\u0085b', 'a\ud800b']) {
        const asInfluencer = await create(account, valid({ bio }));
        const asAccount = await t.call('PATCH', '/api/profile', {
          token: account.accessToken,
          body: { bio },
        });
        expectInvalid(asInfluencer, 'bio');
        expect(asInfluencer.json().details).toEqual(asAccount.json().details);
      }
      const lines = 'First line\r\n\tsecond line';
      expect((await create(account, valid({ bio: lines }))).json().influencer.bio).toBe(lines);
    });

    it('bio: at most 500 characters', async () => {
      const account = await confirmedAccount(t);
      expectInvalid(await create(account, valid({ bio: 'x'.repeat(501) })), 'bio');
      expectInvalid(await create(account, valid({ bio: 'bad\u0000bio' })), 'bio');
      const bio = '😀'.repeat(500);
      expect((await create(account, valid({ bio }))).json().influencer.bio).toBe(bio);
    });

    it('dm_policy: everyone, followers or nobody; followers by default', async () => {
      const account = await confirmedAccount(t);
      expectInvalid(await create(account, valid({ dm_policy: 'friends' })), 'dm_policy');
      expectInvalid(await create(account, valid({ dm_policy: null })), 'dm_policy');
      expect((await create(account, valid())).json().influencer.dm_policy).toBe('followers');
      const other = await confirmedAccount(t);
      expect(
        (await create(other, valid({ dm_policy: 'nobody' }))).json().influencer.dm_policy,
      ).toBe('nobody');
    });

    it('a body that is not an object, or lacks required fields: 400, nothing created', async () => {
      const account = await confirmedAccount(t);
      for (const body of [[], 42, 'x', null]) {
        expectInvalid(
          await t.call('POST', '/api/influencers', {
            token: account.accessToken,
            body: JSON.stringify(body),
            headers: { 'content-type': 'application/json' },
          }),
          'body',
        );
      }
      expectInvalid(await create(account, { display_name: 'X', categories: ['art'] }), 'handle');
      expectError(await mine(account), 404, 'not_influencer');
    });
  });

  describe('concurrent claims', () => {
    it('two accounts claiming one handle at the same moment: one 201, one 409 handle_taken', async () => {
      for (let round = 0; round < 5; round++) {
        const [a, b] = await Promise.all([confirmedAccount(t), confirmedAccount(t)]);
        const handle = uniqueHandle('race');
        const responses = await Promise.all([
          create(a, valid({ handle })),
          create(b, valid({ handle: handle.toUpperCase() })),
        ]);
        const statuses = responses.map((r) => r.statusCode).sort();
        expect(statuses).toEqual([201, 409]);
        expect(responses.find((r) => r.statusCode === 409)?.json().error).toBe('handle_taken');
      }
    });

    it('one account creating twice at once: one 201, one 409 already_influencer', async () => {
      const account = await confirmedAccount(t);
      const responses = await Promise.all([create(account, valid()), create(account, valid())]);
      expect(responses.map((r) => r.statusCode).sort()).toEqual([201, 409]);
      expect(responses.find((r) => r.statusCode === 409)?.json().error).toBe('already_influencer');
    });
  });

  // A chaos check on both databases (the race lands only some of the time); the deterministic
  // cases are test/influencer/profile-deletion-race.test.ts (the create held before its insert,
  // both databases) and test/accounts/deletion-races.test.ts (the deletion held at its lock).
  describe('an account deleted while it creates its profile', () => {
    it('gets 401 (or its 201 before the deletion), never a 500; no profile outlives it', async () => {
      const answers: number[] = [];
      for (let round = 0; round < 3; round++) {
        const account = await confirmedAccount(t);
        const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
        const creates = Array.from({ length: 20 }, async (_, i) => {
          await later(i / 2);
          return create(account, valid({ handle: uniqueHandle('gone') }));
        });
        const deletion = t.call('DELETE', '/api/profile', {
          token: account.accessToken,
          body: { password: account.password },
        });
        const [deleted, ...created] = await Promise.all([deletion, ...creates]);
        expect(deleted.statusCode).toBe(200);
        answers.push(...created.map((r) => r.statusCode));
        expect(await hasProfileRow(t, account.userId)).toBe(false);
      }
      expect(answers.filter((status) => ![201, 401, 409].includes(status))).toEqual([]);
    });
  });

  describe('GET /api/influencers/me', () => {
    it('200 {influencer} for the caller, 404 not_influencer without a profile', async () => {
      const { account, handle } = await creator(t);
      const response = await mine(account);
      expect(response.statusCode).toBe(200);
      expect(Object.keys(response.json())).toEqual(['influencer']);
      expect(response.json().influencer).toMatchObject({
        handle,
        is_following: false,
        can_message: false,
      });
      const body = expectError(await mine(await t.register()), 404, 'not_influencer');
      expect(body.message).toBe('This account has no influencer profile.');
    });
  });

  describe('PATCH /api/influencers/me', () => {
    it('changes the given fields only and answers {message, influencer}', async () => {
      const { account } = await creator(t, { bio: 'Old', dm_policy: 'everyone' });
      const before = (await mine(account)).json().influencer;
      t.clock.advance(2_000);
      const response = await patch(account, {
        display_name: ' Grace Hopper ',
        categories: ['tech', 'education'],
        unknown: 'ignored',
      });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.message).toBe('Influencer profile updated');
      expect(body.influencer).toMatchObject({
        handle: before.handle,
        display_name: 'Grace Hopper',
        categories: ['tech', 'education'],
        bio: 'Old',
        dm_policy: 'everyone',
      });
      expect(body.influencer).not.toHaveProperty('unknown');
      expect(Date.parse(body.influencer.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
      expect(body.influencer.created_at).toBe(before.created_at);
    });

    it('null clears bio and avatar_url; [] clears links', async () => {
      const { account } = await creator(t, {
        bio: 'Bio',
        avatar_url: 'https://x.test/a.png',
        links: [{ label: 'a', url: 'https://x.test/' }],
      });
      const response = await patch(account, { bio: null, avatar_url: null, links: [] });
      expect(response.json().influencer).toMatchObject({ bio: null, avatar_url: null, links: [] });
    });

    it('a new handle, lower-cased; 409 handle_taken for another profile’s, in any case', async () => {
      const other = await creator(t);
      const { account } = await creator(t);
      const renamed = uniqueHandle('New');
      expect((await patch(account, { handle: renamed })).json().influencer.handle).toBe(
        renamed.toLowerCase(),
      );
      expectError(
        await patch(account, { handle: other.handle.toUpperCase() }),
        409,
        'handle_taken',
      );
      expectError(await patch(account, { handle: 'categories' }), 409, 'handle_taken');
      expect((await mine(account)).json().influencer.handle).toBe(renamed.toLowerCase());
      // Its own handle again is no conflict.
      expect((await patch(account, { handle: renamed })).statusCode).toBe(200);
    });

    it('every value rule applies, and a refused change changes nothing', async () => {
      const { account } = await creator(t);
      const before = (await mine(account)).json().influencer;
      const refused: [string, unknown][] = [
        ['handle', 'a-b'],
        ['display_name', ''],
        ['display_name', null],
        ['categories', []],
        ['categories', null],
        ['links', [{ label: 'x', url: 'http://x.test/' }]],
        ['avatar_url', 'https://u:p@x.test/'],
        ['bio', 'x'.repeat(501)],
        ['dm_policy', 'all'],
      ];
      for (const [field, value] of refused) {
        expectInvalid(await patch(account, { display_name: 'Changed', [field]: value }), field);
      }
      expect((await mine(account)).json().influencer).toEqual(before);
    });

    it('an empty body changes nothing; 404 not_influencer without a profile', async () => {
      const { account } = await creator(t);
      const before = (await mine(account)).json().influencer;
      const response = await patch(account, {});
      expect(response.statusCode).toBe(200);
      expect(response.json().influencer).toEqual(before);
      expectError(await patch(await t.register(), { bio: 'x' }), 404, 'not_influencer');
    });

    it('404 not_influencer without a profile, before looking at the fields (a reserved or bad handle)', async () => {
      const fan = await confirmedAccount(t);
      for (const body of [{ handle: 'me' }, { handle: 'x' }, { display_name: '' }])
        expectError(await patch(fan, body), 404, 'not_influencer');
    });
  });

  describe('DELETE /api/influencers/me', () => {
    it('200 {message}; the profile is gone; its handle is free again', async () => {
      const { account, handle } = await creator(t);
      const response = await t.call('DELETE', '/api/influencers/me', {
        token: account.accessToken,
      });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ message: 'Influencer profile deleted' });
      expectError(await mine(account), 404, 'not_influencer');
      expectError(await t.call('GET', `/api/influencers/${handle}`), 404, 'not_found');
      const again = await t.call('DELETE', '/api/influencers/me', { token: account.accessToken });
      expectError(again, 404, 'not_influencer');
      expect((await create(await confirmedAccount(t), valid({ handle }))).statusCode).toBe(201);
    });
  });

  describe('GET /api/influencers/{ref}', () => {
    it('by id or handle, any case; without a token, no per-caller fields', async () => {
      const { id, handle } = await creator(t);
      for (const ref of [id, id.toUpperCase(), handle, handle.toUpperCase()]) {
        const response = await t.call('GET', `/api/influencers/${ref}`);
        expect(response.statusCode).toBe(200);
        expect(Object.keys(response.json().influencer).sort()).toEqual(INFLUENCER_FIELDS);
        expect(response.json().influencer.id).toBe(id);
      }
    });

    it('with a valid token, is_following and can_message; with a bad one, 401', async () => {
      const { handle } = await creator(t, { dm_policy: 'everyone' });
      const fan = await t.register();
      const response = await t.call('GET', `/api/influencers/${handle}`, {
        token: fan.accessToken,
      });
      expect(response.json().influencer).toMatchObject({ is_following: false, can_message: true });
      const forged = `${fan.accessToken.slice(0, -4)}AAAA`;
      expectError(
        await t.call('GET', `/api/influencers/${handle}`, { token: forged }),
        401,
        'unauthorized',
      );
    });

    it('404 not_found for an unknown id or handle, or anything else', async () => {
      for (const ref of [
        '00000000-0000-4000-8000-000000000000',
        'nobody_here_at_all',
        'x',
        '%00',
        'a'.repeat(64),
        'me%2Ffollowers',
      ]) {
        const body = expectError(await t.call('GET', `/api/influencers/${ref}`), 404, 'not_found');
        expect(body.message).toBe('The requested resource was not found.');
      }
    });
  });

  describe('GET /api/influencers/categories', () => {
    it('lists the fixed categories, with and without a token', async () => {
      const response = await t.call('GET', '/api/influencers/categories');
      expect(response.statusCode).toBe(200);
      const { categories } = response.json();
      expect(categories.map((c: { slug: string }) => c.slug)).toEqual([
        'art',
        'beauty',
        'comedy',
        'education',
        'fashion',
        'fitness',
        'food',
        'gaming',
        'lifestyle',
        'music',
        'science',
        'sports',
        'tech',
        'travel',
        'other',
      ]);
      expect(categories[0]).toEqual({ slug: 'art', name: 'Art' });
    });
  });
});
