import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp } from '../helpers/test-app.js';
import { confirmedAccount, expectError, expectInvalid, uniqueHandle } from './support.js';

/** Value rules at their edges: code points, not UTF-16 units; trimming before length. */
describe.each(backends)('influencer values at their edges ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  /** The body as JSON text: JSON.stringify keeps an unpaired surrogate as an escape. */
  const create = async (fields: Record<string, unknown>) => {
    const account = await confirmedAccount(t);
    const body = JSON.stringify({
      handle: uniqueHandle(),
      display_name: 'Probe',
      categories: ['art'],
      ...fields,
    });
    return t.call('POST', '/api/influencers', {
      token: account.accessToken,
      body,
      headers: { 'content-type': 'application/json' },
    });
  };

  it('an https URL with an unpaired surrogate is refused (avatar_url and links)', async () => {
    expectInvalid(await create({ avatar_url: 'https://cdn.example.test/\ud800x' }), 'avatar_url');
    const link = { label: 'Site', url: 'https://example.test/\udfff' };
    expectInvalid(await create({ links: [link] }), 'links');
  });

  it('a URL of 2048 code points is accepted (some of them astral), 2049 are not', async () => {
    const url = (codePoints: number) =>
      `https://cdn.example.test/${'😀'.repeat(codePoints - 'https://cdn.example.test/'.length)}`;
    expect([...url(2048)]).toHaveLength(2048);
    const accepted = await create({ avatar_url: url(2048) });
    expect(accepted.statusCode, accepted.body.slice(0, 200)).toBe(201);
    expectInvalid(await create({ avatar_url: url(2049) }), 'avatar_url');
  });

  it('a display name and a link label are measured after trimming, however much white space', async () => {
    const created = await create({
      display_name: `${' '.repeat(300)}Bob${'\n'.repeat(300)}`,
      links: [{ label: `${' '.repeat(200)}Shop `, url: 'https://shop.example.test/' }],
    });
    expect(created.statusCode, created.body).toBe(201);
    const { influencer } = created.json();
    expect([influencer.display_name, influencer.links[0].label]).toEqual(['Bob', 'Shop']);
  });

  it('a display name or label must show something, and not reorder itself (bidi overrides)', async () => {
    for (const invisible of ['\u200b', '\u200b\u200d\u2060', '\u0301', '\u3164', '\u2800']) {
      expectInvalid(await create({ display_name: invisible }), 'display_name');
      const link = { label: invisible, url: 'https://example.test/' };
      expectInvalid(await create({ links: [link] }), 'links');
    }
    for (const reordering of ['evil\u202egpj.exe', 'a\u202ab', 'x\u2067y\u2069']) {
      expectInvalid(await create({ display_name: reordering }), 'display_name');
    }
    // Joiners inside emoji, marks of direction, and scripts that use them are names like others.
    for (const name of ['👩‍💻 Dev', 'שלום\u200f Dana', 'می\u200cخواهم', '🔥']) {
      const created = await create({ display_name: name });
      expect(created.statusCode, `${JSON.stringify(name)}: ${created.body}`).toBe(201);
      expect(created.json().influencer.display_name).toBe(name.normalize('NFC'));
    }
  });

  it('a ref longer than any id or handle is 404 not_found, not a validation error', async () => {
    for (const length of [65, 100]) {
      expectError(await t.call('GET', `/api/influencers/${'a'.repeat(length)}`), 404, 'not_found');
    }
  });

  it('GET /api/influencers/categories with a valid bearer token is outside the anonymous budget', async () => {
    const ip = randomIp();
    const account = await t.register();
    for (let i = 0; i < 300; i++) {
      expect((await t.call('GET', '/api/influencers/categories', { ip })).statusCode).toBe(200);
    }
    expectError(await t.call('GET', '/api/influencers/categories', { ip }), 429, 'rate_limited');
    const signedIn = await t.call('GET', '/api/influencers/categories', {
      ip,
      token: account.accessToken,
    });
    expect(signedIn.statusCode, signedIn.body).toBe(200);
  });
});
