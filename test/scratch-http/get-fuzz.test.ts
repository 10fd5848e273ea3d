import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp, type Account } from '../helpers/test-app.js';
import { ChatClient, openConversation } from '../chat/fixture.js';
import { creator as createInfluencer } from '../influencer/support.js';

const rawValue = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }).map(encodeURIComponent),
  fc.string({ maxLength: 30 }),
  fc.constantFrom(
    '%',
    '%ZZ',
    '%ED%A0%80',
    '%00',
    '%C0%80',
    '%FF',
    '-1',
    '0',
    '00',
    '1e3',
    '101',
    '200',
    '201',
    '9999',
    '99999999999999999999',
    'true',
    'false',
    'TRUE',
    '',
    '+',
    '%20',
    'name',
    'popular',
    'newest',
    'art',
    'ART',
    'a.b',
    '.',
    '..',
  ),
);
const KEYS = [
  'q',
  'category',
  'sort',
  'limit',
  'cursor',
  'unread_only',
  'before',
  'after',
  'since_version',
  'x',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'limit[]',
  'q[a]',
];
const query = fc
  .array(fc.tuple(fc.constantFrom(...KEYS), rawValue), { maxLength: 4 })
  .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));

describe.each(backends)('GET query fuzz ($name)', (backend) => {
  let t: TestApp;
  let account: Account;
  let conversation: string;
  beforeAll(async () => {
    t = await TestApp.start(backend);
    account = await t.register();
    const inf = await createInfluencer(t);
    void inf;
    const peer = await t.register();
    conversation = await openConversation(t, account, peer);
    await new ChatClient(t, account).sent(conversation, 'hi');
  });
  afterAll(() => t.close());

  it('never 5xx, always JSON', async () => {
    const urls = () => [
      '/api/influencers',
      '/api/influencers/following',
      '/api/influencers/me/followers',
      '/api/blocks',
      '/api/chat/conversations',
      `/api/chat/conversations/${conversation}/messages`,
      `/api/chat/conversations/${conversation}/changes`,
      '/api/sessions',
      '/api/influencers/categories',
      '/api/chat/unread',
      '/api/profile',
    ];
    const problems: string[] = [];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...urls()),
        query,
        fc.boolean(),
        fc.constantFrom('GET', 'HEAD'),
        async (path, qs, withToken, method) => {
          const url = `${path}?${qs}`;
          const r = await t.app.inject({
            method: method as 'GET',
            url,
            remoteAddress: randomIp(),
            headers: withToken ? { authorization: `Bearer ${account.accessToken}` } : {},
          });
          if (r.statusCode >= 500 || !/^application\/json/.test(String(r.headers['content-type'])))
            problems.push(
              `${method} ${url} -> ${r.statusCode} ${r.headers['content-type']} ${r.body.slice(0, 200)}`,
            );
        },
      ),
      { seed: 7, numRuns: 1500 },
    );
    console.log(problems.slice(0, 20).join('\n'));
    expect(problems).toEqual([]);
  }, 240_000);
});
