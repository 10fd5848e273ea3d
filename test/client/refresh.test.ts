import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  memoryTokenStore,
  webStorageTokenStore,
  type Tokens,
  type WebStorage,
} from '../../client/src/index.js';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, uniqueEmail, type TestApp } from '../helpers/test-app.js';
import {
  apiErrorOf,
  clientOn,
  collectingGarbage,
  Device,
  REFRESH,
  registered,
  startService,
} from './service.js';

/** Past the access token's 15 minutes. */
const EXPIRED = 15 * 60_000 + 1_000;
const PROFILE = 'GET /api/profile';

/** localStorage as two tabs of one origin share it. */
class SharedStorage implements WebStorage {
  private readonly items = new Map<string, string>();
  getItem = (key: string) => this.items.get(key) ?? null;
  setItem = (key: string, value: string) => void this.items.set(key, value);
  removeItem = (key: string) => void this.items.delete(key);
}

describe.each(backends)('the client keeps and renews its tokens ($name)', (backend) => {
  let t: TestApp;
  let baseUrl: string;
  beforeAll(async () => ({ t, baseUrl } = await startService(backend)));
  afterAll(() => t.close());

  /** Two tabs that both read the same tokens before either refreshed (stores not shared). */
  async function twoTabs(device: Device) {
    const { client } = await registered(baseUrl);
    const tokens = (await client.tokens()) as Tokens;
    const tab = () => clientOn(baseUrl, device, { store: memoryTokenStore(tokens) });
    return { a: tab(), b: tab(), tokens };
  }

  it('calls that find the access token expired together share one refresh; each is sent again once', async () => {
    const device = new Device();
    const { client, email } = await registered(baseUrl, device);
    const before = (await client.tokens()) as Tokens;
    t.clock.advance(EXPIRED); // the service's clock: the client's own still finds the token fresh

    const calls = 8;
    const answers = await Promise.all(
      Array.from({ length: calls }, () => client.GET('/api/profile')),
    );
    expect(answers.map(({ user }) => user.email)).toEqual(Array(calls).fill(email));
    expect(device.count(REFRESH)).toBe(1);
    expect(device.count(PROFILE)).toBe(2 * calls);
    const after = (await client.tokens()) as Tokens;
    expect(after.refreshToken).not.toBe(before.refreshToken);
    expect(after.accessToken).not.toBe(before.accessToken);
  });

  it('renews the access token before it expires by its own clock, without a refused call', async () => {
    const device = new Device();
    let skip = 0;
    const { client } = await registered(baseUrl, device, { now: () => Date.now() + skip });
    const before = (await client.tokens()) as Tokens;
    skip = 15 * 60_000 - 10_000; // 10 s left: inside the 30 s margin
    await client.GET('/api/profile');
    expect(device.requests).toEqual(['POST /api/register', REFRESH, PROFILE]);
    expect(await client.accessToken()).not.toBe(before.accessToken);
    expect(device.count(REFRESH)).toBe(1);
  });

  it('signs out once when the session was revoked, and the calls answer 401 unauthorized', async () => {
    const device = new Device();
    let signedOut = 0;
    const { client, email } = await registered(baseUrl, device, { onSignedOut: () => signedOut++ });
    const other = clientOn(baseUrl);
    await other.login({ email, password: STRONG_PASSWORD });
    const { sessions } = await other.GET('/api/sessions');
    const revoked = sessions.find((session) => !session.current);
    await other.DELETE('/api/sessions/{id}', { params: { path: { id: revoked?.id ?? '' } } });

    const errors = await Promise.all([1, 2, 3].map(() => apiErrorOf(client.GET('/api/profile'))));
    for (const error of errors) expect(error).toMatchObject({ status: 401, error: 'unauthorized' });
    expect(device.count(REFRESH)).toBe(1);
    expect(signedOut).toBe(1);
    expect(await client.tokens()).toBeNull();
    expect((await other.GET('/api/profile')).user.email).toBe(email);
  });

  it("two tabs refreshing one token at once both get the session's current refresh token (10 s grace)", async () => {
    const device = new Device();
    const { a, b, tokens } = await twoTabs(device);
    t.clock.advance(EXPIRED);
    await Promise.all([a.GET('/api/profile'), b.GET('/api/profile')]);
    expect(device.count(REFRESH)).toBe(2);
    const [afterA, afterB] = [(await a.tokens()) as Tokens, (await b.tokens()) as Tokens];
    expect(afterA.refreshToken).toBe(afterB.refreshToken);
    expect(afterA.refreshToken).not.toBe(tokens.refreshToken);

    // The session was not revoked: its current token goes on rotating.
    t.clock.advance(EXPIRED);
    await b.GET('/api/profile');
    expect(device.count(REFRESH)).toBe(3);
    expect(await b.tokens()).not.toEqual(afterB);
  });

  it('a tab presenting a rotated refresh token after the grace ends the session: both tabs sign out', async () => {
    const device = new Device();
    const { a, b } = await twoTabs(device);
    t.clock.advance(EXPIRED);
    await a.GET('/api/profile');
    t.clock.advance(11_000);

    expect(await apiErrorOf(b.GET('/api/profile'))).toMatchObject({ error: 'unauthorized' });
    expect(await b.tokens()).toBeNull();
    expect(await apiErrorOf(a.GET('/api/profile'))).toMatchObject({ error: 'unauthorized' });
    expect(await a.tokens()).toBeNull();
    expect(device.count(REFRESH)).toBe(3);
  });

  it("tabs sharing one Web Storage see each other's sign-in, refresh and sign-out", async () => {
    const device = new Device();
    const storage = new SharedStorage();
    const tab = () => clientOn(baseUrl, device, { store: webStorageTokenStore(storage) });
    const [a, b] = [tab(), tab()];
    await a.register({ email: uniqueEmail('tabs'), password: STRONG_PASSWORD });
    expect(await b.tokens()).toEqual(await a.tokens());

    t.clock.advance(EXPIRED);
    await a.GET('/api/profile');
    await b.GET('/api/profile');
    expect(device.count(REFRESH)).toBe(1);
    expect(device.count(PROFILE)).toBe(3); // a: refused, then again; b: once, with a's new token

    await b.logout();
    expect(await a.tokens()).toBeNull();
  });

  it('keeps the tokens when every try of a refresh fails on the way, and refreshes on the next call', async () => {
    const device = new Device();
    let signedOut = 0;
    const { client } = await registered(baseUrl, device, { onSignedOut: () => signedOut++ });
    const before = await client.tokens();
    t.clock.advance(EXPIRED);
    device.dropNext(REFRESH, 4); // the first try and its three retries (6.5 s in all)
    await expect(client.GET('/api/profile')).rejects.toThrow(/network is down/);
    expect(await client.tokens()).toEqual(before);
    expect(device.count(REFRESH)).toBe(4);

    await client.GET('/api/profile');
    expect(device.count(REFRESH)).toBe(5);
    expect(signedOut).toBe(0);
  });

  /** An error answer in the service's shape, as a failing instance or a limit would give it. */
  const errorAnswer =
    (status: number, error: string, headers: Record<string, string> = {}) =>
    () =>
      Response.json({ message: `answered ${status}`, error }, { status, headers });

  /** A signed-in client whose access token the service now sees expired; counts its sign-outs. */
  async function expiredSession() {
    const device = new Device();
    let signedOut = 0;
    const { client } = await registered(baseUrl, device, { onSignedOut: () => signedOut++ });
    const before = await client.tokens();
    t.clock.advance(EXPIRED);
    return { device, client, before, signedOut: () => signedOut };
  }

  it('tries a refresh answered 5xx again after half a second, with the same token: the call succeeds', async () => {
    const { device, client, signedOut } = await expiredSession();
    device.answerNext(REFRESH, errorAnswer(503, 'unavailable'));
    expect((await client.GET('/api/profile')).user).toBeDefined();
    expect(device.count(REFRESH)).toBe(2);
    expect(signedOut()).toBe(0);
  });

  // client/README.md: "A refresh that fails on the way (no answer, or a 5xx …) is tried again
  // with the same token after 0.5, 2 and 4 s".
  it('waits 0.5 s, then 2 s, then 4 s between tries of a refresh answered 5xx, presenting the same token each time', async () => {
    const { device, client, signedOut } = await expiredSession();
    const tries: { at: number; token: string }[] = [];
    device.answerNext(
      REFRESH,
      async (request) => {
        tries.push({
          at: performance.now(),
          token: ((await request.json()) as { refresh_token: string }).refresh_token,
        });
        return errorAnswer(503, 'unavailable')();
      },
      3,
    );
    expect((await client.GET('/api/profile')).user).toBeDefined();
    const done = performance.now();
    expect(device.count(REFRESH)).toBe(4);
    expect(tries).toHaveLength(3);
    expect(new Set(tries.map((attempt) => attempt.token)).size).toBe(1);
    const gaps = tries.slice(1).map((attempt, i) => attempt.at - (tries[i] as { at: number }).at);
    // Lower bounds only: a busy machine may fire a timer late, never early.
    expect(gaps[0]).toBeGreaterThanOrEqual(450);
    expect(gaps[1]).toBeGreaterThanOrEqual(1_950);
    // The fourth try, which succeeds, came 4 s after the third.
    expect(done - (tries[2] as { at: number }).at).toBeGreaterThanOrEqual(3_950);
    expect(signedOut()).toBe(0);
  }, 30_000);

  it('also tries again when a proxy, not the service, answered 502', async () => {
    const { device, client } = await expiredSession();
    device.answerNext(REFRESH, () => new Response('<html>Bad Gateway</html>', { status: 502 }));
    expect((await client.GET('/api/profile')).user).toBeDefined();
    expect(device.count(REFRESH)).toBe(2);
  });

  it('does not try a refresh answered 429 again: the call fails with it, the tokens stay, the next call refreshes', async () => {
    const { device, client, before, signedOut } = await expiredSession();
    device.answerNext(REFRESH, errorAnswer(429, 'rate_limited', { 'Retry-After': '30' }));
    const refused = await apiErrorOf(client.GET('/api/profile'));
    expect({
      status: refused.status,
      error: refused.error,
      retryAfter: refused.retryAfter,
    }).toEqual({ status: 429, error: 'rate_limited', retryAfter: 30 });
    expect(device.count(REFRESH)).toBe(1);
    expect(await client.tokens()).toEqual(before);

    expect((await client.GET('/api/profile')).user).toBeDefined();
    expect(device.count(REFRESH)).toBe(2);
    expect(signedOut()).toBe(0);
  });

  it('does not try a refresh again when a proxy answered 4xx (the same token would get the same answer)', async () => {
    const { device, client } = await expiredSession();
    device.answerNext(REFRESH, () => new Response('Too Many Requests', { status: 429 }));
    await expect(client.GET('/api/profile')).rejects.toMatchObject({ status: 429 });
    expect(device.count(REFRESH)).toBe(1);
  });

  it('gives up a refresh that gets no answer 9 s after it began (inside the grace), keeping the tokens', async () => {
    const { device, client, before, signedOut } = await expiredSession();
    device.hangNext(REFRESH);
    const began = performance.now();
    const stopCollecting = collectingGarbage();
    await expect(client.GET('/api/profile'))
      .rejects.toMatchObject({ name: 'TimeoutError' })
      .finally(stopCollecting);
    expect(performance.now() - began).toBeGreaterThanOrEqual(8_900);
    expect(performance.now() - began).toBeLessThan(12_000); // the 401 before it, under load
    expect(device.count(REFRESH)).toBe(1); // no try would have ended inside the grace
    expect(await client.tokens()).toEqual(before);
    expect((await client.GET('/api/profile')).user).toBeDefined();
    expect(signedOut()).toBe(0);
  }, 30_000);

  it('tries a refresh whose answer was lost again with the same token, inside the 10 s grace: still signed in', async () => {
    const device = new Device();
    let signedOut = 0;
    const { client } = await registered(baseUrl, device, { onSignedOut: () => signedOut++ });
    t.clock.advance(EXPIRED);
    device.loseAnswerOfNext(REFRESH); // the service rotated the token; the client never heard
    expect((await client.GET('/api/profile')).user).toBeDefined();
    expect(device.count(REFRESH)).toBe(2);
    // Long after the grace, the tokens it holds are the session's current ones.
    t.clock.advance(EXPIRED);
    expect((await client.GET('/api/profile')).user).toBeDefined();
    expect(signedOut).toBe(0);
  });
});
