// The chat connection's life against fake sockets: nothing outlives close(), and no socket opens
// for a user who signed out while it was being opened.
import { describe, expect, it } from 'vitest';
import type { ChatHistory } from '../../client/src/chat/catch-up.js';
import { restHistory } from '../../client/src/chat/history.js';
import { ChatConnection, type WebSocketConstructor } from '../../client/src/chat/connection.js';
import type { CallMethod } from '../../client/src/client.js';
import {
  createAccountClient,
  memoryTokenStore,
  type Tokens,
  type TokenStore,
} from '../../client/src/index.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A fake chat socket: answers `ready` for `user` to the auth frame; `all` lists every one made;
 * while `control.refuse`, new ones fail to connect (1006: the server is away).
 */
function fakeSockets(userOf: (token: string) => string = () => 'ada') {
  const all: FakeSocket[] = [];
  const control = { refuse: false };
  class FakeSocket {
    readyState = 0;
    onopen: (() => void) | null = null;
    onmessage: ((event: { data: string }) => void) | null = null;
    onclose: ((event: { code: number; reason: string }) => void) | null = null;
    onerror: (() => void) | null = null;
    sent: string[] = [];
    constructor() {
      all.push(this);
      const refused = control.refuse;
      setTimeout(() => {
        if (refused) return this.serverCloses(1006);
        this.readyState = 1;
        this.onopen?.();
      }, 1);
    }
    send(frame: string) {
      this.sent.push(frame);
      const parsed = JSON.parse(frame) as { type: string; access_token?: string };
      if (parsed.type !== 'auth') return;
      const ready = { type: 'ready', user_id: userOf(parsed.access_token ?? ''), session_id: 's' };
      setTimeout(() => this.onmessage?.({ data: JSON.stringify(ready) }), 1);
    }
    serverSends(frame: object) {
      this.onmessage?.({ data: JSON.stringify(frame) });
    }
    serverCloses(code: number) {
      this.readyState = 3;
      this.onclose?.({ code, reason: '' });
    }
    close() {
      this.readyState = 3;
    }
  }
  return { all, control, impl: FakeSocket as unknown as WebSocketConstructor };
}

const emptyOverview: ChatHistory['overview'] = async () => ({
  conversations: [],
  next_cursor: null,
  unread: {} as never,
});

/** A connection of user Ada through `sockets`, catching up from `history`. */
function connectionOf(
  sockets: ReturnType<typeof fakeSockets>,
  history: ChatHistory,
  options: Omit<ConstructorParameters<typeof ChatConnection>[1], 'webSocketImpl'> = {},
  renew: () => Promise<Tokens | null> = async () => null,
): ChatConnection {
  const deps = {
    url: 'ws://x.test/api/chat/ws',
    tokens: async () => ({ accessToken: 'a', refreshToken: 'r' }),
    renew,
    now: Date.now,
    history,
  };
  return new ChatConnection(deps, { webSocketImpl: sockets.impl, ...options });
}

describe('after close()', () => {
  it('calls no listener: a catch-up that was in flight and fails is not reported', async () => {
    const sockets = fakeSockets();
    let fail: (error: Error) => void = () => undefined;
    const chat = connectionOf(sockets, {
      changes: async () => null,
      overview: () => new Promise((_, reject) => (fail = reject)), // in flight
    });
    const errors: unknown[] = [];
    chat.on('error', (error) => errors.push(error));
    await expect.poll(() => chat.state.status).toBe('open'); // its resync is now reading the list
    chat.close();
    fail(new Error('503 after close'));
    await sleep(10);
    expect(errors).toEqual([]);
  });

  it('makes no more catch-up requests: a resync under way stops', async () => {
    const sockets = fakeSockets();
    const asked: number[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const chat = connectionOf(
      sockets,
      {
        // 50 pages of changes to read for c.
        changes: async (_id, since) => {
          asked.push(since);
          await gate;
          return { messages: [], version: since + 1, has_more: since + 1 < 50 };
        },
        overview: async () => ({
          conversations: [{ id: 'c', version: 50 } as never],
          next_cursor: null,
          unread: {} as never,
        }),
      },
      { versions: [['c', 0]] },
    );
    await expect.poll(() => asked.length).toBe(1);
    chat.close();
    release();
    await sleep(50);
    expect(asked.length).toBe(1);
  });

  it('leaves no timer behind when a state listener closes on `reconnecting`', async () => {
    const sockets = fakeSockets();
    const chat = connectionOf(
      sockets,
      { changes: async () => null, overview: emptyOverview },
      {
        backoff: { baseMs: 60_000, capMs: 60_000 },
        random: () => 0.5,
      },
    );
    chat.on('state', (state) => {
      if (state.status === 'reconnecting') chat.close(); // e.g. "stop on the first drop"
    });
    await expect.poll(() => chat.state.status).toBe('open');
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    sockets.all[0]!.serverCloses(1006);
    expect(chat.state.status).toBe('closed');
    const after = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    // Liveness' timer went, and no reconnect timer came in its place.
    expect(after).toBeLessThan(before);
  });
});

describe('a sign-in of another user while the first connection is being opened', () => {
  const jwt = (user: string) =>
    `e30.${Buffer.from(JSON.stringify({ sub: user, sid: `${user}-s` })).toString('base64url')}.sig`;
  it('opens no socket for the user who left: it reads the store again', async () => {
    // An asynchronous store (React Native secure storage): a read returns what it held when it began.
    let held: Tokens | null = {
      accessToken: jwt('ada'),
      refreshToken: 'ra',
      expiresAt: Date.now() + 900_000,
    };
    const store: TokenStore = {
      get: async () => {
        const value = held;
        await sleep(20);
        return value;
      },
      set: async (next) => {
        held = next;
      },
    };
    const fetch = async (request: Request) => {
      const path = new URL(request.url).pathname;
      const body =
        path === '/api/chat/conversations'
          ? { conversations: [], next_cursor: null }
          : path === '/api/chat/unread'
            ? { total_unread_count: 0, unread_conversations: 0 }
            : {
                message: 'Login successful',
                user: { id: 'bob' },
                access_token: jwt('bob'),
                refresh_token: 'rb',
                token_type: 'Bearer',
                expires_in: 900,
              };
      return new Response(JSON.stringify(body), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    };
    const api = createAccountClient({ baseUrl: 'http://x.test', fetch, store });
    const sockets = fakeSockets(
      (token) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sub,
    );
    const chat = api.connectChat({ webSocketImpl: sockets.impl });
    const states: unknown[] = [];
    chat.on('state', (state) => states.push(state));
    await sleep(5); // the connection is reading the store
    await api.login({ email: 'bob@example.com', password: 'x' });
    await sleep(60);
    // Never Ada's socket, which would hand Ada's events to Bob's app.
    expect(sockets.all.flatMap((socket) => socket.sent).join()).not.toContain(jwt('ada'));
    expect(chat.state).toMatchObject({ status: 'open', userId: 'bob' });
    chat.close();
  });
});

describe('Retry-After', () => {
  it('makes the reconnection after a catch-up refused with 429 wait at least as long', async () => {
    const sockets = fakeSockets();
    const limited = Object.assign(new Error('429'), { retryAfter: 42 });
    const chat = connectionOf(
      sockets,
      { changes: async () => null, overview: async () => Promise.reject(limited) },
      { backoff: { baseMs: 10, capMs: 20 } },
    );
    const waits: number[] = [];
    chat.on('error', () => undefined);
    chat.on('state', (state) => {
      if (state.status === 'reconnecting') waits.push(state.inMs);
    });
    await expect.poll(() => waits.length).toBeGreaterThan(0);
    chat.close();
    expect(waits[0]).toBeGreaterThanOrEqual(42_000);
  });
});

describe('a socket closed with 4401 while the refresh has no answer yet', () => {
  it('is reported reconnecting, not open (typing would be dropped, the app shows "connected")', async () => {
    const sockets = fakeSockets();
    const noAnswerYet = () => new Promise<never>(() => undefined);
    const chat = connectionOf(
      sockets,
      { changes: async () => null, overview: emptyOverview },
      {},
      noAnswerYet,
    );
    await expect.poll(() => chat.state.status).toBe('open');
    sockets.all[0]!.serverCloses(4401);
    await sleep(20);
    expect(chat.state).toMatchObject({ status: 'reconnecting', closeCode: 4401 });
    chat.close();
  });
});

describe("a catch-up's deadline", () => {
  it('aborts the request beside one that failed, instead of leaving it without a deadline', async () => {
    let unreadSignal: AbortSignal | undefined;
    const GET = (async (url: string, init: { signal: AbortSignal }) => {
      if (url === '/api/chat/conversations') throw new TypeError('fetch failed');
      unreadSignal = init.signal;
      // No answer (a dead connection): it ends only if aborted.
      return new Promise((_, reject) =>
        init.signal.addEventListener('abort', () => reject(init.signal.reason)),
      );
    }) as unknown as CallMethod<'get'>;
    const history = restHistory(GET, 100, 60_000);
    await expect(history.overview()).rejects.toThrow('fetch failed');
    expect(unreadSignal?.aborted).toBe(true);
  });
});

describe('reconnecting after a shutdown (1001) while the server is still away', () => {
  // Every socket of an instance gets 1001 at once: the first attempts spread over 4 s (base × 4)
  // rather than 1 s, and so do the ones after it (each 1006: still restarting), until a stable
  // connection; the second one's window came back down to 2 s.
  it('keeps every following window at least as wide as the first', async () => {
    const sockets = fakeSockets();
    const chat = connectionOf(
      sockets,
      { changes: async () => null, overview: emptyOverview },
      // base 10 ms, the top of each window: every window here is the real one / 100
      { backoff: { baseMs: 10, capMs: 300 }, random: () => 0.999_999 },
    );
    const windows: number[] = [];
    chat.on('state', (state) => {
      if (state.status === 'reconnecting') windows.push(state.inMs);
    });
    await expect.poll(() => chat.state.status).toBe('open');
    sockets.control.refuse = true;
    sockets.all[0]!.serverCloses(1001);
    await expect.poll(() => windows.length).toBe(4);
    chat.close();
    expect(windows).toEqual([39, 39, 39, 79]); // 4 s three times, then 8 s, at the real scale
  });
});

describe("a socket's catch-up once the socket is gone", () => {
  /** `changes` never answers (the network died while it was asked) until aborted. */
  function hangingChanges() {
    const asked: AbortSignal[] = [];
    const GET = (async (url: string, init: { signal: AbortSignal }) => {
      if (url === '/api/chat/conversations')
        return { conversations: [{ id: 'c', version: 1 }], next_cursor: null };
      if (url === '/api/chat/unread') return { total_unread_count: 0, unread_conversations: 0 };
      asked.push(init.signal);
      return new Promise((_, reject) =>
        init.signal.addEventListener('abort', () => reject(init.signal.reason)),
      );
    }) as unknown as CallMethod<'get'>;
    return { asked, GET };
  }

  it("is aborted, so the new socket's sync does not wait for its deadline", async () => {
    const { asked, GET } = hangingChanges();
    const sockets = fakeSockets();
    const chat = connectionOf(sockets, restHistory(GET, 100, 60_000), {
      versions: [['c', 1]],
      backoff: { baseMs: 10, capMs: 20 },
    });
    const syncs: number[] = [];
    chat.on('sync', () => syncs.push(Date.now()));
    chat.on('error', () => undefined);
    await expect.poll(() => syncs.length).toBe(1);
    // A gap: `changes` is asked and gets no answer; then the socket drops (1006).
    sockets.all[0]!.serverSends({
      type: 'message.created',
      conversation_id: 'c',
      version: 3,
      chat_message: { id: 'm3', version: 3 },
    });
    await expect.poll(() => asked.length).toBe(1);
    sockets.all[0]!.serverCloses(1006);
    expect(asked[0]!.aborted).toBe(true);
    // The new socket's resync reads the list (c still at 1): its sync comes at once.
    await expect.poll(() => syncs.length, { timeout: 2_000 }).toBe(2);
    chat.close();
  });

  it('is aborted by close(): no request or deadline timer outlives the connection', async () => {
    const { asked, GET } = hangingChanges();
    const sockets = fakeSockets();
    // Tracked at 0, listed at 1: the resync after `ready` reads c's changes.
    const chat = connectionOf(sockets, restHistory(GET, 100), { versions: [['c', 0]] });
    await expect.poll(() => asked.length).toBe(1);
    chat.close();
    expect(asked[0]!.aborted).toBe(true);
  });
});

describe("an open socket's token renewal refused with 429", () => {
  // A refresh refused with Retry-After: 60 was presented again 5 s later (the renewal's retry).
  it('is not tried again before its Retry-After', async () => {
    const refreshes: number[] = [];
    const json = (status: number, body: object, headers: Record<string, string> = {}) =>
      new Response(JSON.stringify(body), {
        status,
        headers: { 'content-type': 'application/json', ...headers },
      });
    const fetch = async (request: Request) => {
      const path = new URL(request.url).pathname;
      if (path === '/api/refresh-token') {
        refreshes.push(Date.now());
        const body = { error: 'rate_limited', message: 'Too many requests.' };
        return json(429, body, { 'retry-after': '60' });
      }
      if (path === '/api/chat/conversations')
        return json(200, { conversations: [], next_cursor: null });
      return json(200, { total_unread_count: 0, unread_conversations: 0 });
    };
    // 30.3 s left: the socket's renewal (30 s before expiry) is due in 0.3 s.
    const expiresAt = Date.now() + 30_300;
    const store = memoryTokenStore({ accessToken: 'a', refreshToken: 'r', expiresAt });
    const api = createAccountClient({ baseUrl: 'http://x.test', fetch, store });
    const chat = api.connectChat({ webSocketImpl: fakeSockets().impl });
    const errors: unknown[] = [];
    chat.on('error', (error) => errors.push(error));
    await expect.poll(() => refreshes.length).toBe(1);
    expect(errors[0]).toMatchObject({ status: 429, retryAfter: 60 });
    await sleep(5_500); // past the 5 s retry of a refresh that failed without advice
    chat.close();
    expect(refreshes).toHaveLength(1);
  });
});
