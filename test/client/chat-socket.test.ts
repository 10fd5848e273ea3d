// The client's chat connection against the service on a real port: first-frame authentication,
// renewal before expiry, reconnection, API.md's catch-up rule, and the close codes that stop it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type {
  ChatConnection,
  ChatConnectionOptions,
  ChatMessageEvent,
  Tokens,
} from '../../client/src/index.js';
import { twoMembers } from '../chat/fixture.js';
import { RealtimeApp } from '../chat/realtime/fixture.js';
import { backends } from '../helpers/backends.js';
import { clientOf, recorded, Sockets, until, upgradesOf } from './chat.js';
import { collectingGarbage, REFRESH } from './service.js';

const MINUTE = 60_000;
/** Fast reconnects, so that the tests do not wait out real delays. */
const QUICK = { baseMs: 20, capMs: 100 };

/** What a test checks of message events: type, seq, version and where each came from. */
const brief = (events: readonly ChatMessageEvent[]) =>
  events.map((e) => [e.type, e.chat_message.seq, e.version, e.source]);

describe.each(backends)('the client’s chat connection ($name)', (backend) => {
  let rt: RealtimeApp;
  let upgrades: ReturnType<typeof upgradesOf>;
  const opened: ChatConnection[] = [];
  beforeAll(async () => {
    rt = await RealtimeApp.start(backend, { env: { TRUST_PROXY: 'true' } });
    upgrades = upgradesOf(rt);
  });
  afterEach(() => {
    for (const chat of opened.splice(0)) chat.close();
  });
  afterAll(() => rt?.close());

  /** A conversation, and the influencer's client connected to the chat socket. */
  async function connected(
    options: Parameters<typeof clientOf>[2] = {},
    chatOptions: ChatConnectionOptions = {},
  ) {
    const pair = await twoMembers(rt.t);
    const { api, device, store } = clientOf(rt, pair.influencer.account, options);
    const sockets = new Sockets();
    const chat = api.connectChat({
      webSocketImpl: sockets.impl,
      backoff: QUICK,
      pageSize: 2,
      ...chatOptions,
    });
    opened.push(chat);
    const states = recorded(chat, 'state');
    const messages = recorded(chat, 'message');
    const syncs = recorded(chat, 'sync');
    await until(() => chat.state.status === 'open', 'open');
    return { ...pair, api, device, store, sockets, chat, states, messages, syncs };
  }

  it('authenticates with an auth frame first, then hands over events as they come', async () => {
    const { fan, influencer, id, sockets, chat, states, messages, syncs } = await connected();
    expect(sockets.made).toHaveLength(1);
    expect(sockets.last.url).toBe(`ws://127.0.0.1:${rt.port}/api/chat/ws`);
    expect(sockets.last.sent[0]).toEqual({
      type: 'auth',
      access_token: influencer.account.accessToken,
    });
    expect(chat.state).toMatchObject({ status: 'open', userId: influencer.userId });
    await until(() => syncs.length === 1, 'the sync after ready');
    expect(syncs[0]?.unread).toEqual({ total_unread_count: 0, unread_conversations: 0 });

    const sent = await fan.sent(id, 'hello');
    await until(() => messages.length === 1, 'the message');
    const asSeen = { ...sent, client_message_id: undefined }; // the key goes to its sender only
    expect(messages[0]).toEqual({
      type: 'message.created',
      conversation_id: id,
      version: 1,
      chat_message: asSeen,
      source: 'socket',
    });
    expect(chat.version(id)).toBe(1);
    expect(states.map((s) => s.status)).toEqual(['connecting', 'open']);
  });

  it('sends typing to the peer, whose connection hands it over', async () => {
    const { fan, influencer, id, chat } = await connected();
    const peer = clientOf(rt, fan.account).api.connectChat();
    opened.push(peer);
    const typing = recorded(peer, 'typing');
    await until(() => peer.state.status === 'open', 'the peer open');
    chat.typing(id);
    await until(() => typing.length === 1, 'typing');
    expect(typing).toEqual([{ type: 'typing', conversation_id: id, user_id: influencer.userId }]);
  });

  it('sends a fresh token in an auth frame before the access token expires, and stays open past it', async () => {
    // By the client's clock the token has 38 s left: its renewal is due 8 s after connecting
    // (room, under load, for the connection to open and the service's clock to move first).
    const { fan, id, api, device, sockets, states, messages } = await connected({
      expiresInMs: 38_000,
    });
    expect(device.count(REFRESH)).toBe(0); // not renewed yet: else the clock moves too late
    rt.t.clock.advance(14 * MINUTE); // the service's: the renewed token lasts until +29 min
    const socket = sockets.last;
    const auths = () => socket.sent.filter((frame) => frame.type === 'auth');
    await until(() => auths().length === 2, 'the renewal', 20_000);
    const renewed = (await api.tokens()) as Tokens;
    expect(auths().map((frame) => frame.access_token)).toEqual([
      expect.not.stringMatching(renewed.accessToken),
      renewed.accessToken,
    ]);
    expect(device.count(REFRESH)).toBe(1);

    await socket.roundTrip(); // the auth frame has been read
    rt.t.clock.advance(2 * MINUTE); // past the first token's exp, well inside the second's
    await new Promise((resolve) => setTimeout(resolve, 600)); // the service checks every 250 ms
    await socket.roundTrip();
    await fan.renewToken(); // the fan's token expired with the first
    await fan.sent(id, 'still here');
    await until(() => messages.length === 1, 'the message');
    expect(sockets.made).toHaveLength(1);
    expect(states.map((s) => s.status)).toEqual(['connecting', 'open']);
  });

  it('on a gap, pages changes and hands over what it missed once, in order', async () => {
    const { fan, id, device, sockets, chat, messages } = await connected();
    await fan.sent(id, 'one');
    await until(() => messages.length === 1, 'the first message');
    const socket = sockets.last;
    socket.losing = true;
    const [, third] = [await fan.sent(id, 'two'), await fan.sent(id, 'three')];
    expect((await fan.edit(third.id, 'three, edited')).statusCode).toBe(200);
    await until(() => socket.lost.length === 3, 'three lost events');
    socket.losing = false;
    await fan.sent(id, 'five'); // version 5 after 1: a gap

    await until(() => messages.length === 4, 'the missed messages');
    await chat.settled();
    expect(brief(messages)).toEqual([
      ['message.created', 1, 1, 'socket'],
      ['message.created', 2, 2, 'changes'],
      ['message.updated', 3, 4, 'changes'], // created and edited while lost: its current state
      ['message.created', 4, 5, 'changes'],
    ]);
    expect(messages[2]?.chat_message.text).toBe('three, edited');
    expect(device.count(`GET /api/chat/conversations/${id}/changes`)).toBe(2); // pages of 2
    expect(chat.version(id)).toBe(5);
    expect(sockets.made).toHaveLength(1);
  });

  it('gives up a catch-up request that gets no answer, reconnects, and catches up then', async () => {
    const { fan, id, device, sockets, chat, messages } = await connected(
      {},
      { catchUpTimeoutMs: 2_000 }, // every catch-up request has it: room for the ones that answer
    );
    const errors = recorded(chat, 'error');
    await fan.sent(id, 'one');
    await until(() => messages.length === 1, 'the first message');
    sockets.last.losing = true;
    await fan.sent(id, 'two');
    await until(() => sockets.last.lost.length === 1, 'a lost event');
    sockets.last.losing = false;
    device.hangNext(`GET /api/chat/conversations/${id}/changes`);
    const stopCollecting = collectingGarbage();
    await fan.sent(id, 'three'); // a gap: its changes request never gets an answer

    await until(() => errors.length > 0, 'the hung request to time out').finally(stopCollecting);
    await until(() => messages.length === 3, 'the missed messages, after a reconnect');
    expect(brief(messages).map(([, seq]) => seq)).toEqual([1, 2, 3]);
    expect((errors[0] as Error).name).toBe('TimeoutError');
    expect(sockets.made).toHaveLength(2);
  });

  it('reconnects after the service drops the socket, and catches up what it missed meanwhile', async () => {
    const { fan, id, sockets, chat, states, messages, syncs } = await connected();
    const first = await fan.sent(id, 'one');
    await until(() => messages.length === 1 && syncs.length === 1, 'the first message');
    sockets.offline = true; // the next attempts fail until the network is back
    upgrades.at(-1)?.destroy(); // the service's end of the connection, cut
    // Two attempts: the drop, then one against the network that is down (slow on a busy machine).
    await until(
      () => states.filter((s) => s.status === 'reconnecting').length >= 2,
      'a retry',
      25_000,
    );
    await fan.sent(id, 'two'); // sent while no socket is open
    await fan.sent(id, 'three');
    expect((await fan.edit(first.id, 'one, edited')).statusCode).toBe(200);
    sockets.offline = false;

    // A retry, a handshake and three catch-up requests: as slow as the retry above on a busy machine.
    await until(() => syncs.length === 2, 'the sync after reconnecting', 25_000);
    await fan.sent(id, 'four');
    await until(() => messages.length === 5, 'every message');
    await chat.settled();
    expect(brief(messages)).toEqual([
      ['message.created', 1, 1, 'socket'],
      ['message.created', 2, 2, 'changes'],
      ['message.created', 3, 3, 'changes'],
      ['message.updated', 1, 4, 'changes'],
      ['message.created', 4, 5, 'socket'],
    ]);
    const reconnecting = states.filter((s) => s.status === 'reconnecting');
    expect(reconnecting[0]).toMatchObject({ closeCode: 1006, attempt: 0 });
    expect(reconnecting.map((s) => s.attempt)).toEqual(reconnecting.map((_, i) => i));
    expect(chat.state.status).toBe('open');
    expect(sockets.last.sent[0]?.type).toBe('auth');
  }, 60_000); // two waits of up to 25 s each above

  it('renews and reconnects when the service closes with 4401 at the token’s expiry', async () => {
    const { device, chat, states, sockets } = await connected();
    rt.t.clock.advance(15 * MINUTE); // expired by the service's clock, not by the client's
    await until(() => sockets.made.length === 2 && chat.state.status === 'open', 'reconnected');
    expect(states.find((s) => s.status === 'reconnecting')).toMatchObject({ closeCode: 4401 });
    expect(device.count(REFRESH)).toBe(1);
  });

  it('signs out and stops when the session ended (4401, then a refused refresh)', async () => {
    let signedOut = 0;
    const { influencer, chat, states, sockets, store } = await connected({
      onSignedOut: () => signedOut++,
    });
    const token = influencer.account.accessToken;
    expect((await rt.t.post('/api/logout', {}, { token })).statusCode).toBe(200);
    await until(() => chat.state.status === 'signed_out', 'signed out');
    expect(states.map((s) => s.status)).toEqual([
      'connecting',
      'open',
      'reconnecting',
      'signed_out',
    ]);
    expect(sockets.made).toHaveLength(1);
    expect(await store.get()).toBeNull();
    expect(signedOut).toBe(1);
  });

  it('stops for good on 4403: the store now holds another user’s tokens', async () => {
    // The renewal is due 8 s after connecting: after the store has changed hands.
    const { fan, chat, states, sockets, store } = await connected({ expiresInMs: 38_000 });
    // Another tab signed in as someone else over the same store; the renewal sends that token.
    const other = { ...fan.account, expiresAt: Date.now() + 15 * MINUTE };
    await store.set(other);
    await until(() => chat.state.status === 'closed', 'closed', 20_000);
    expect(chat.state).toMatchObject({ status: 'closed', closeCode: 4403 });
    expect(states.map((s) => s.status)).toEqual(['connecting', 'open', 'closed']);
    expect(sockets.made).toHaveLength(1);
  });

  it('stops with 4403 when a reconnection would sign in as another user (the store changed hands)', async () => {
    const { fan, chat, states, sockets, store, messages } = await connected();
    // Another tab signed in as someone else over the same store, then the network dropped.
    await store.set({ ...fan.account, expiresAt: Date.now() + 15 * MINUTE });
    upgrades.at(-1)?.destroy();
    await until(() => chat.state.status === 'closed', 'closed');
    expect(chat.state).toMatchObject({ status: 'closed', closeCode: 4403 });
    expect(states.map((s) => s.status)).toEqual([
      'connecting',
      'open',
      'reconnecting',
      'connecting',
      'closed',
    ]);
    expect(sockets.made).toHaveLength(2);
    expect(messages).toEqual([]);
  });

  it('ends at once on signOut(): the socket, still good on the service, hands over nothing more', async () => {
    const { fan, id, api, chat, states, messages } = await connected();
    await api.signOut();
    expect(chat.state).toMatchObject({ status: 'signed_out' });
    await fan.sent(id, 'for the user who left');
    await new Promise((resolve) => setTimeout(resolve, 300)); // it would have arrived by now
    expect(messages).toEqual([]);
    expect(states.map((s) => s.status)).toEqual(['connecting', 'open', 'signed_out']);
  });

  it('closes (4403) at once when another user signs in on this client', async () => {
    const { fan, id, api, chat, messages } = await connected();
    const other = await rt.t.register();
    await api.login({ email: other.email, password: other.password });
    expect(chat.state).toMatchObject({ status: 'closed', closeCode: 4403 });
    await fan.sent(id, 'for the user who left');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(messages).toEqual([]);
  });

  it('closed before its first tick, opens nothing and says closed', async () => {
    const pair = await twoMembers(rt.t);
    const { api, device } = clientOf(rt, pair.fan.account, { expiresInMs: 10_000 }); // near expiry
    const sockets = new Sockets();
    const chat = api.connectChat({ webSocketImpl: sockets.impl, backoff: QUICK });
    const states = recorded(chat, 'state');
    chat.close(); // React StrictMode: an effect's clean-up right after it ran
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(states.map((s) => s.status)).toEqual(['closed']);
    expect(chat.state.status).toBe('closed');
    expect(sockets.made).toHaveLength(0);
    expect(device.count(REFRESH)).toBe(0);
  });

  it('closed by an error listener (its token could not be had), stays closed: no reconnect', async () => {
    const pair = await twoMembers(rt.t);
    const { api, device } = clientOf(rt, pair.fan.account, { expiresInMs: 10_000 }); // near expiry
    device.answerNext(REFRESH, () =>
      Response.json({ message: 'Slow down', error: 'rate_limited' }, { status: 429 }),
    );
    const sockets = new Sockets();
    const chat = api.connectChat({ webSocketImpl: sockets.impl, backoff: QUICK });
    const states = recorded(chat, 'state');
    chat.on('error', () => chat.close());
    await new Promise((resolve) => setTimeout(resolve, 300)); // past any reconnect's delay
    expect(states.map((s) => s.status)).toEqual(['connecting', 'closed']);
    expect(chat.state.status).toBe('closed');
    expect(sockets.made).toHaveLength(0);
    expect(device.count(REFRESH)).toBe(1);
  });

  it('says why and stops when no WebSocket can be made (ws:// from an https page)', async () => {
    const pair = await twoMembers(rt.t);
    const { api } = clientOf(rt, pair.fan.account);
    const refused = class {
      constructor() {
        throw new DOMException(
          'An insecure WebSocket connection may not be initiated',
          'SecurityError',
        );
      }
    } as unknown as typeof WebSocket;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const chat = api.connectChat({ webSocketImpl: refused, backoff: QUICK });
      const errors = recorded(chat, 'error');
      await until(() => chat.state.status === 'closed', 'closed');
      expect(errors).toHaveLength(1);
      expect((errors[0] as Error).name).toBe('SecurityError');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('drops a socket that stops answering and reconnects; a live one stays', async () => {
    const pair = await twoMembers(rt.t);
    const { api } = clientOf(rt, pair.influencer.account);
    const sockets = new Sockets();
    const chat = api.connectChat({
      webSocketImpl: sockets.impl,
      backoff: QUICK,
      pingIntervalMs: 100,
      pongTimeoutMs: 1_000, // room for a loaded machine: a live socket must not be dropped
    });
    opened.push(chat);
    const states = recorded(chat, 'state');
    await until(() => chat.state.status === 'open', 'open');
    const first = sockets.last;
    first.silent = true; // nothing it receives reaches the connection any more
    await until(() => sockets.made.length === 2 && chat.state.status === 'open', 'reconnected');
    expect(first.sent.some((frame) => frame.type === 'ping')).toBe(true);
    expect(states.find((s) => s.status === 'reconnecting')).toMatchObject({ closeCode: 4000 });

    const second = sockets.last;
    const pongs = () => second.received.filter((frame) => frame.type === 'pong').length;
    await until(() => pongs() >= 3, 'three pongs');
    expect(sockets.made).toHaveLength(2);
    expect(chat.state.status).toBe('open');
  });
});

describe.each(backends)('the client’s chat connection and the heartbeat ($name)', (backend) => {
  const HEARTBEAT_MS = 100;
  let rt: RealtimeApp;
  beforeAll(async () => {
    rt = await RealtimeApp.start(backend, {
      env: { TRUST_PROXY: 'true' },
      overrides: { realtime: { heartbeatIntervalMs: HEARTBEAT_MS } },
    });
  });
  afterAll(() => rt?.close());

  it('answers the service’s pings (Node’s WebSocket does, as browsers do): not cut', async () => {
    const { api } = clientOf(rt, await rt.t.register());
    const sockets = new Sockets();
    const chat = api.connectChat({ webSocketImpl: sockets.impl });
    await until(() => chat.state.status === 'open', 'open');
    await new Promise((resolve) => setTimeout(resolve, 10 * HEARTBEAT_MS)); // cut after 2 missed
    await sockets.last.roundTrip();
    expect(await rt.metric('chat_sockets_closed_total', '{reason="heartbeat_timeout"}')).toBe(0);
    expect(sockets.made).toHaveLength(1);
    chat.close();
  });
});
