// What a refresh under way must not undo: a sign-out or a sign-in that happened meanwhile. A fake
// fetch holds the refresh's answer back, so the order of events is the test's, not the network's.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createAccountClient,
  memoryTokenStore,
  type Tokens,
  type TokenStore,
} from '../../client/src/index.js';

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/** An access token shaped as the service's (API.md: a JWT naming the user and the session). */
const accessToken = (user: string, session = `${user}-session`) =>
  `e30.${Buffer.from(JSON.stringify({ sub: user, sid: session })).toString('base64url')}.sig`;

const signedIn = (name: string, user = name) => ({
  message: 'Login successful',
  user: { id: user },
  access_token: accessToken(user, `${user}-session`),
  refresh_token: `${name}-refresh`,
  token_type: 'Bearer',
  expires_in: 900,
});

const NOW = 1_000_000;
/** Ada's token after a renewal: the same user and session, another token (a later `iat`, say). */
const RENEWED_ADA = accessToken('ada').replace(/sig$/, 'renewed');

/**
 * A store over an asynchronous storage (React Native's secure storage): each operation takes 5 ms,
 * one at a time, in the order asked.
 */
function asyncStore(initial: Tokens): TokenStore {
  let tokens: Tokens | null = initial;
  let queue = Promise.resolve();
  const after5ms = <T>(operation: () => T) => {
    const done = queue.then(() => new Promise((resolve) => setTimeout(resolve, 5))).then(operation);
    queue = done.then(() => undefined);
    return done;
  };
  return {
    get: () => after5ms(() => tokens),
    set: (next) => after5ms(() => void (tokens = next)),
  };
}

/** A client whose access token is about to expire (a call refreshes first), and the held answer. */
function nearExpiry(makeStore: (tokens: Tokens) => TokenStore = memoryTokenStore) {
  let answer: (response: Response) => void = () => undefined;
  const refreshAnswer = new Promise<Response>((resolve) => (answer = resolve));
  const calls: string[] = [];
  const fetch = async (request: Request) => {
    const path = new URL(request.url).pathname;
    calls.push(`${path} ${request.headers.get('authorization') ?? ''}`.trim());
    if (path === '/api/refresh-token') return refreshAnswer;
    if (path === '/api/login') return json(200, signedIn('bob'));
    if (path === '/api/profile' && request.headers.get('authorization') === null)
      return json(401, { message: 'Unauthorized', error: 'unauthorized' });
    if (path === '/api/profile') return json(200, { user: { id: 'someone' } });
    throw new Error(`unexpected ${path}`);
  };
  let signedOut = 0;
  const tokens: Tokens = {
    accessToken: accessToken('ada'),
    refreshToken: 'ada-refresh',
    expiresAt: NOW + 10_000,
  };
  const api = createAccountClient({
    baseUrl: 'https://api.example.test',
    fetch,
    store: makeStore(tokens),
    now: () => NOW,
    onSignedOut: () => (signedOut += 1),
  });
  const renewed = () =>
    answer(
      json(200, {
        ...signedIn('ada2', 'ada'),
        access_token: RENEWED_ADA,
        message: 'Token refreshed',
      }),
    );
  return { api, calls, renewed, signedOut: () => signedOut };
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 10));

/** Bob signs in while a refresh of Ada's tokens is under way, for a call made as Ada. */
async function signInDuringRefresh() {
  const { api, calls, renewed } = nearExpiry();
  const call = api.GET('/api/profile').catch((error: unknown) => error);
  await flush();
  await api.signOut();
  await api.login({ email: 'bob@example.test', password: 'a-Quiet-harbour-93' });
  renewed();
  // The call was made for Ada, who is gone: it is not made at all (401), never as Bob, nor as no
  // one (where a token is optional, that would still do something).
  expect(await call).toMatchObject({ status: 401, error: 'unauthorized' });
  expect((await api.tokens())?.accessToken).toBe(accessToken('bob'));
  expect(calls).not.toContain('/api/profile');
}

describe('a refresh under way', () => {
  it('does not undo a sign-out made meanwhile', async () => {
    const { api, renewed, signedOut } = nearExpiry();
    const call = api.GET('/api/profile').catch((error: unknown) => error);
    await flush(); // the refresh has been sent
    await api.signOut();
    renewed();
    await call;
    expect(await api.tokens()).toBeNull();
    expect(signedOut()).toBe(1);
  });

  it('does not replace the tokens of a sign-in made meanwhile, nor make the call as that user', () =>
    signInDuringRefresh());

  it('goes on as the same user when only the session was renewed meanwhile', async () => {
    const { api, calls, renewed } = nearExpiry();
    const call = api.GET('/api/profile');
    await flush();
    renewed();
    await call;
    expect(calls.at(-1)).toBe(`/api/profile Bearer ${RENEWED_ADA}`);
  });
});

describe('a refresh under way, over an asynchronous store', () => {
  it('does not undo a sign-out whose write had not reached the store yet', async () => {
    const { api, renewed, signedOut } = nearExpiry(asyncStore);
    const call = api.GET('/api/profile').catch((error: unknown) => error);
    await flush(); // the refresh has been sent
    const signingOut = api.signOut(); // its read, then its write, queue behind the refresh's
    renewed();
    await Promise.all([call, signingOut]);
    expect(await api.tokens()).toBeNull();
    expect(signedOut()).toBe(1);
  });
});

describe('without TextDecoder and atob (React Native before 0.85)', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('still tells two users apart: a sign-in made during a refresh is kept, and no call goes out as that user', async () => {
    vi.stubGlobal('TextDecoder', undefined);
    vi.stubGlobal('atob', undefined);
    await signInDuringRefresh();
  });
});

describe('a 401 that does not refuse the token', () => {
  it('is not renewed and sent again: a login with a wrong password, made while signed in, counts once', async () => {
    const calls: string[] = [];
    const fetch = async (request: Request) => {
      const path = new URL(request.url).pathname;
      calls.push(path);
      if (path === '/api/login')
        return json(401, { message: 'Invalid email or password', error: 'invalid_credentials' });
      throw new Error(`unexpected ${path}`);
    };
    const store = memoryTokenStore({ accessToken: accessToken('ada'), refreshToken: 'ada-r' });
    const api = createAccountClient({ baseUrl: 'https://api.example.test', fetch, store });
    const body = { email: 'ada@example.test', password: 'not-her-Password-1' };
    await expect(api.POST('/api/login', { body })).rejects.toMatchObject({
      status: 401,
      error: 'invalid_credentials',
    });
    expect(calls).toEqual(['/api/login']);
    expect((await api.tokens())?.refreshToken).toBe('ada-r');
  });
});

describe('a call refused 401 while another user signs in', () => {
  it('is not sent again as that user (a write for Ada must not land on Bob)', async () => {
    let answer: (response: Response) => void = () => undefined;
    const refreshAnswer = new Promise<Response>((resolve) => (answer = resolve));
    const calls: string[] = [];
    const fetch = async (request: Request) => {
      const path = new URL(request.url).pathname;
      const bearer = request.headers.get('authorization') ?? '';
      calls.push(`${request.method} ${path} ${bearer}`.trim());
      if (path === '/api/refresh-token') return refreshAnswer;
      if (path === '/api/login') return json(200, signedIn('bob'));
      if (bearer === `Bearer ${accessToken('bob')}`) return json(200, { user: { id: 'bob' } });
      return json(401, { message: 'Unauthorized', error: 'unauthorized' });
    };
    // No expiry known: the token is renewed when the service refuses it.
    const store = memoryTokenStore({ accessToken: accessToken('ada'), refreshToken: 'ada-r' });
    const api = createAccountClient({ baseUrl: 'https://api.example.test', fetch, store });
    const call = api
      .PATCH('/api/profile', { body: { bio: "Ada's bio" } })
      .catch((error: unknown) => error);
    await flush(); // refused, and the refresh sent
    await api.login({ email: 'bob@example.test', password: 'a-Quiet-harbour-93' });
    answer(
      json(200, {
        ...signedIn('ada2', 'ada'),
        access_token: RENEWED_ADA,
        message: 'Token refreshed',
      }),
    );
    expect(await call).toMatchObject({ status: 401 });
    expect(calls.filter((made) => made.startsWith('PATCH'))).toEqual([
      `PATCH /api/profile Bearer ${accessToken('ada')}`,
    ]);
    expect((await api.tokens())?.accessToken).toBe(accessToken('bob'));
  });
});

describe('a logout under way', () => {
  /** Ada signed in; the logout's answer held back, or its request failing as `logout` says. */
  function loggingOut(logout: 'held' | 'network down' | 503) {
    let answer: (response: Response) => void = () => undefined;
    const logoutAnswer = new Promise<Response>((resolve) => (answer = resolve));
    const fetch = async (request: Request) => {
      const path = new URL(request.url).pathname;
      if (path === '/api/login') return json(200, signedIn('bob'));
      if (path !== '/api/logout') throw new Error(`unexpected ${path}`);
      if (logout === 'network down') throw new TypeError('fetch failed');
      if (logout === 503) return json(503, { message: 'Unavailable', error: 'unavailable' });
      return logoutAnswer;
    };
    let signedOut = 0;
    const store = memoryTokenStore({ accessToken: accessToken('ada'), refreshToken: 'ada-r' });
    const api = createAccountClient({
      baseUrl: 'https://api.example.test',
      fetch,
      store,
      onSignedOut: () => (signedOut += 1),
    });
    return { api, answered: () => answer(json(200, {})), signedOut: () => signedOut };
  }

  it('does not forget a sign-in made meanwhile (here or in a tab sharing the store)', async () => {
    const { api, answered, signedOut } = loggingOut('held');
    const logout = api.logout();
    await flush();
    await api.login({ email: 'bob@example.test', password: 'a-Quiet-harbour-93' });
    answered();
    await logout;
    expect((await api.tokens())?.accessToken).toBe(accessToken('bob'));
    expect(signedOut()).toBe(0);
  });

  it.each(['network down', 503] as const)(
    'that fails (%s) keeps the tokens: the session is still alive and the logout can be tried again',
    async (failure) => {
      const { api, signedOut } = loggingOut(failure);
      await expect(api.logout()).rejects.toBeDefined();
      expect((await api.tokens())?.accessToken).toBe(accessToken('ada'));
      expect(signedOut()).toBe(0);
    },
  );
});

describe('signing out', () => {
  it('twice at once (a double tap) forgets the tokens once: onSignedOut is told once', async () => {
    let signedOut = 0;
    const api = createAccountClient({
      baseUrl: 'https://api.example.test',
      fetch: async () => json(200, {}),
      store: memoryTokenStore({ accessToken: accessToken('ada'), refreshToken: 'r' }),
      onSignedOut: () => (signedOut += 1),
    });
    await Promise.all([api.signOut(), api.signOut()]);
    expect(await api.tokens()).toBeNull();
    expect(signedOut).toBe(1);
  });

  it('after a refused refresh, does not wipe a sign-in made while it read an asynchronous store', async () => {
    // React Native's secure storage: each operation takes 5 ms, one at a time, in order.
    let held: Tokens | null = {
      accessToken: accessToken('ada'),
      refreshToken: 'ada-refresh',
      expiresAt: NOW + 10_000, // within the renewal margin: a call refreshes first
    };
    let reads = 0;
    const writes: string[] = [];
    let queue = Promise.resolve();
    const in5ms = <T>(operation: () => T) => {
      const done = queue.then(() => new Promise((r) => setTimeout(r, 5))).then(operation);
      queue = done.then(() => undefined);
      return done;
    };
    const store: TokenStore = {
      get: () => ((reads += 1), in5ms(() => held)),
      set: (next) => {
        writes.push(next === null ? 'null' : next.refreshToken);
        return in5ms(() => void (held = next));
      },
    };
    let refuse: () => void = () => undefined;
    const refused = new Promise<Response>(
      (resolve) =>
        (refuse = () =>
          resolve(json(401, { message: 'Invalid refresh token', error: 'invalid_refresh_token' }))),
    );
    const fetch = async (request: Request) => {
      const path = new URL(request.url).pathname;
      if (path === '/api/refresh-token') return refused;
      if (path === '/api/login') return json(200, signedIn('bob'));
      return json(401, { message: 'Unauthorized', error: 'unauthorized' });
    };
    const api = createAccountClient({
      baseUrl: 'https://x.test',
      fetch,
      store,
      now: () => NOW,
    });

    const call = api.GET('/api/profile').catch(() => undefined); // Ada's revoked session
    await new Promise((r) => setTimeout(r, 30)); // its refresh is under way
    const readsBefore = reads;
    refuse();
    // The refresh reads the store once more, then its sign-out reads it again: Bob signs in then.
    await expect.poll(() => reads - readsBefore, { interval: 1 }).toBe(2);
    await api.login({ email: 'bob@example.test', password: 'a-Quiet-harbour-93' });
    await call;
    await new Promise((r) => setTimeout(r, 50));
    expect({ writes, now: (await api.tokens())?.refreshToken }).toEqual({
      writes: ['bob-refresh'],
      now: 'bob-refresh',
    });
  });
});

describe('a call aborted while its token is being renewed', () => {
  it('rejects with the abort at once, not when the refresh (with no answer) gives up 9 s later', async () => {
    const fetch = async (request: Request): Promise<Response> => {
      if (new URL(request.url).pathname === '/api/refresh-token')
        // No answer (a dead connection): it ends when the refresh's own deadline aborts it.
        return new Promise((_, reject) =>
          request.signal.addEventListener('abort', () => reject(request.signal.reason)),
        );
      return json(200, { user: {} });
    };
    const api = createAccountClient({
      baseUrl: 'https://api.example.test',
      fetch,
      now: () => NOW,
      store: memoryTokenStore({
        accessToken: accessToken('ada'),
        refreshToken: 'r',
        expiresAt: NOW + 10_000, // within the renewal margin: the call renews first
      }),
    });
    const controller = new AbortController();
    const call = api.GET('/api/profile', { signal: controller.signal }).then(
      () => 'answered',
      (error: unknown) => (error as Error).name,
    );
    setTimeout(() => controller.abort(), 20);
    const outcome = await Promise.race([
      call,
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 1_000)),
    ]);
    expect(outcome).toBe('AbortError');
  });
});
