import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../../helpers/backends.js';
import type { Account } from '../../helpers/test-app.js';
import { RealtimeApp } from './fixture.js';
import { SocketClient } from './socket-client.js';

// Short for the test, with room for a loaded machine: a socket is cut only after two whole
// intervals without its pong being read.
const HEARTBEAT_MS = 250;

describe.each(backends)('chat socket: frames, limits and heartbeat ($name)', (backend) => {
  let rt: RealtimeApp;
  let alice: Account;

  beforeAll(async () => {
    rt = await RealtimeApp.start(backend, {
      overrides: { realtime: { heartbeatIntervalMs: HEARTBEAT_MS } },
    });
    alice = await rt.t.register();
  });
  afterAll(() => rt?.close());

  it('answers ping with pong', async () => {
    const client = await rt.connect(alice);
    client.send({ type: 'ping' });
    expect(await client.waitFor('pong')).toEqual([{ type: 'pong' }]);
    client.close();
  });

  it('answers ping with pong before authentication too (and nothing else counts then)', async () => {
    const client = await rt.open();
    client.send({ type: 'typing', conversation_id: '00000000-0000-4000-8000-000000000000' });
    client.send({ type: 'ping' });
    expect(await client.waitFor('pong')).toEqual([{ type: 'pong' }]);
    expect(client.frames).toEqual([{ type: 'pong' }]);
    client.close();
  });

  it('ignores unknown and malformed frames and stays open', async () => {
    const client = await rt.connect(alice);
    const junk = [
      'not json',
      '[]',
      '42',
      'null',
      '{"type":"dance"}',
      '{"no_type":true}',
      '{"type":"auth"}',
      '{"type":"auth","access_token":7}',
      '{"type":"typing"}',
    ];
    for (const frame of junk) client.send(frame);
    client.ws.send(Buffer.from('{"type":"ping"}'), { binary: true });
    await client.roundTrip();
    expect(client.isOpen).toBe(true);
    expect(client.frames.map((f) => f.type)).toEqual(['ready', 'pong']);
    client.close();
  });

  it('takes a frame of 16 KiB and closes with 1009 on a larger one', async () => {
    const client = await rt.connect(alice);
    const frameOf = (bytes: number) => {
      const head = '{"type":"ping","pad":"';
      return `${head}${'x'.repeat(bytes - head.length - 2)}"}`;
    };
    client.send(frameOf(16 * 1024));
    await client.waitFor('pong');
    client.send(frameOf(16 * 1024 + 1));
    expect((await client.waitClosed()).code).toBe(1009);
    await expect
      .poll(() => rt.metric('chat_sockets_closed_total', '{reason="frame_too_big"}'))
      .toBe(1);
  });

  it('closes a sixth socket of one user with 4429 and keeps the five; one closed makes room', async () => {
    const bob = await rt.t.register();
    const five = await Promise.all(Array.from({ length: 5 }, () => rt.connect(bob)));
    const sixth = await rt.open({ token: bob.accessToken });
    expect((await sixth.waitClosed()).code).toBe(4429);
    expect(sixth.framesOf('ready')).toEqual([]);
    for (const client of five) await client.roundTrip();
    five[0]!.close();
    await five[0]!.waitClosed();
    const again = await rt.connect(bob);
    for (const client of [again, ...five.slice(1)]) client.close();
  });

  it('does not count a socket the server closed against the cap while its client has not answered', async () => {
    const bob = await rt.t.register();
    const other = await rt.t.login(bob.email, bob.password);
    const four = await Promise.all(Array.from({ length: 4 }, () => rt.connect(bob)));
    const deaf = await rt.connect(other);
    // Its client reads nothing more: the server's close frame stays unanswered.
    (deaf.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const id = await rt.sessionIdOf(other);
    const revoked = await rt.t.call('DELETE', `/api/sessions/${id}`, { token: bob.accessToken });
    expect(revoked.statusCode).toBe(200);
    let fifth: SocketClient | undefined;
    for (let attempt = 0; fifth === undefined && attempt < 30; attempt++) {
      const client = await rt.open({ token: bob.accessToken });
      const outcome = await Promise.race([
        client.waitFor('ready').then(
          () => 'ready',
          () => 'closed',
        ),
        client.closed.then(() => 'closed'),
      ]);
      if (outcome === 'ready') fifth = client;
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(fifth, 'a fifth open socket within 3 s').toBeDefined();
    for (const client of [...four, fifth, deaf]) client?.ws.terminate();
  });

  it('cuts a ready socket the server closed that leaves the close frame unanswered within seconds, not 30', async () => {
    const carol = await rt.t.register();
    const ended = () => rt.metric('chat_sockets_closed_total', '{reason="session_ended"}');
    const before = await ended();
    const deaf = await rt.connect(carol);
    deaf.ws.pause(); // reads nothing from here on: the close frame goes unanswered
    const loggedOut = await rt.t.call('POST', '/api/logout', { token: carol.accessToken });
    expect(loggedOut.statusCode).toBe(200);
    // ws alone would wait 30 s for the client's answer, the socket held all along.
    await expect.poll(ended, { timeout: 10_000 }).toBe(before + 1);
    deaf.ws.resume();
    await deaf.waitClosed();
  });

  it('cuts a socket its client closed and then left half-open within seconds, not 30', async () => {
    const dave = await rt.t.register();
    const open = () => rt.metric('chat_sockets_open');
    const before = await open();
    const leaving = await rt.connect(dave);
    expect(await open()).toBe(before + 1);
    leaving.ws.close(1000);
    // Reads nothing more: it never sees the server's answer, so never ends its connection, and
    // ws alone would hold the socket 30 s for that end (uncounted by the cap meanwhile).
    (leaving.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    await expect.poll(open, { timeout: 10_000 }).toBe(before);
    leaving.ws.terminate();
  });

  it('pings every interval and drops a client that leaves two pings unanswered', async () => {
    const answering = await rt.connect(alice);
    const silent = await SocketClient.connect(rt.url, {
      token: alice.accessToken,
      autoPong: false,
    });
    await silent.waitFor('ready');
    const closed = await silent.waitClosed(20 * HEARTBEAT_MS);
    expect(closed.code).toBe(1006); // cut, no closing handshake with a peer that does not answer
    // Cut after exactly two unanswered pings (counted from the upgrade: the first may come in the
    // same read as the upgrade's answer, before `connect` resolves).
    expect(silent.pings).toBe(2);
    // Well past two intervals, the answering client is still there.
    await new Promise((resolve) => setTimeout(resolve, 5 * HEARTBEAT_MS));
    await answering.roundTrip();
    expect(
      await rt.metric('chat_sockets_closed_total', '{reason="heartbeat_timeout"}'),
    ).toBeGreaterThanOrEqual(1);
    answering.close();
  });

  it('answers a plain HTTP request to the socket path with 426 JSON', async () => {
    const response = await rt.t.call('GET', '/api/chat/ws', { token: alice.accessToken });
    expect(response.statusCode).toBe(426);
    expect(response.headers.upgrade).toBe('websocket');
    expect(response.json()).toMatchObject({ error: 'upgrade_required' });
  });

  it('refuses a WebSocket upgrade to any other path', async () => {
    await expect(
      SocketClient.connect(rt.url.replace('/api/chat/ws', '/api/profile')),
    ).rejects.toThrow(/401/);
  });

  // API.md: never a token in the URL, which ends up in logs. A client that puts one there anyway,
  // on a path whose route takes no socket, must not find it in ours: @fastify/websocket accepted
  // such an upgrade, closed it, and logged its whole URL at info.
  it('refuses an upgrade to a route without a socket before it is accepted, and logs no token from its URL', async () => {
    const signature = alice.accessToken.split('.')[2] as string;
    for (const path of ['/healthz', '/api/influencers', '/api/influencers/categories']) {
      const url = rt.url.replace('/api/chat/ws', path) + `?access_token=${alice.accessToken}`;
      await expect(SocketClient.connect(url), path).rejects.toThrow(/404/);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(rt.t.logs.filter((line) => line.includes(signature))).toEqual([]);
  });
});

describe.each(backends)('chat socket: shutdown ($name)', (backend) => {
  it('closes a handshake refused before routing (a path that is not UTF-8), and shuts down at once', async () => {
    const rt = await RealtimeApp.start(backend);
    const { port } = new URL(rt.url);
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(
      'GET /api/chat/ws/%FF HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    await closed; // by the server: before, it stayed open past every timeout
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(answer).toContain('"error":"bad_request"');
    await rt.close(); // before, it waited for that socket for ever
  });

  it('closes every socket with 1001 after the server stops taking new ones', async () => {
    const rt = await RealtimeApp.start(backend);
    const alice = await rt.t.register();
    const clients = [await rt.connect(alice), await rt.connect(alice)];
    let reconnect: Promise<string> | undefined;
    void clients[0]!.closed.then(() => {
      // The moment the first 1001 arrives, a new socket is refused.
      reconnect = SocketClient.connect(rt.url, { token: alice.accessToken }).then(
        () => 'accepted',
        (error: Error) => error.message,
      );
    });
    await rt.close();
    for (const client of clients) expect((await client.closed).code).toBe(1001);
    expect(await reconnect).not.toBe('accepted');
  });
});
