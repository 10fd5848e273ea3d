import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { creator } from '../influencer/support.js';

// API.md: "The same `limit` and cursor rules hold for every other paged list in this document
// (with its own default and maximum where its row says so)": 1–100 unless a row says otherwise.
const PAGED_LISTS = [
  '/api/influencers',
  '/api/influencers/following',
  '/api/influencers/me/followers',
  '/api/blocks',
  '/api/chat/conversations',
];

describe.each(backends)('the limit of every paged list ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it.each(PAGED_LISTS)('%s takes 1 to 100, and refuses 0 and 101', async (path) => {
    const { account } = await creator(t);
    const list = (limit: number) =>
      t.call('GET', `${path}?limit=${limit}`, { token: account.accessToken });
    for (const limit of [1, 100]) expect((await list(limit)).statusCode, `${limit}`).toBe(200);
    for (const limit of [0, 101]) {
      const refused = await list(limit);
      expect(refused.statusCode, `${limit}`).toBe(400);
      expect(refused.json().error).toBe('validation_failed');
    }
  });
});
