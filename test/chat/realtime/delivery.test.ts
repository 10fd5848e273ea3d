import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../../helpers/backends.js';
import type { Account } from '../../helpers/test-app.js';
import { RealtimeApp } from './fixture.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A synthetic chat event, as the Chat group publishes them after commit. */
function messageEvent(conversationId: string, version: number, text = 'hello') {
  return {
    type: 'message.created',
    conversation_id: conversationId,
    version,
    chat_message: { id: `m-${version}`, seq: version, text },
  };
}

/** A conversation id of its own for each test: delivery remembers versions per conversation. */
const newConversation = () => randomUUID();

describe.each(backends)('chat socket: delivery of events ($name)', (backend) => {
  let rt: RealtimeApp;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    // A slow reader closed with 4008 reads its close frame only once it reads again, after the
    // other clients here got their events: on a busy machine, later than the 2 s a closing socket
    // gets before it is cut (then the client sees 1006, not the code this file checks).
    rt = await RealtimeApp.start(backend, { overrides: { realtime: { closeGraceMs: 120_000 } } });
    alice = await rt.t.register();
    bob = await rt.t.register();
  });
  afterAll(() => rt?.close());

  it("writes each event to every socket of its user once, in order, and to nobody else's", async () => {
    const aliceSockets = [await rt.connect(alice), await rt.connect(alice)];
    const bobSocket = await rt.connect(bob);
    const conversation = newConversation();
    for (let version = 1; version <= 50; version += 1) {
      rt.bus.publish([alice.userId], messageEvent(conversation, version));
    }
    for (const client of aliceSockets) {
      const got = await client.waitFor('message.created', 50);
      expect(got.map((frame) => frame.version)).toEqual(
        Array.from({ length: 50 }, (_, i) => i + 1),
      );
      expect(got[0]).toEqual(messageEvent(conversation, 1));
    }
    await bobSocket.roundTrip();
    expect(bobSocket.framesOf('message.created')).toEqual([]);
    for (const client of [...aliceSockets, bobSocket]) client.close();
  });

  it('puts swapped versions of a conversation back in order, and drops one overtaken', async () => {
    const client = await rt.connect(alice);
    const conversation = newConversation();
    for (const version of [1, 3, 2, 4]) {
      rt.bus.publish([alice.userId], messageEvent(conversation, version));
    }
    await client.waitFor('message.created', 4);
    // A gap that does not fill: the next version goes out after a short wait, then a late
    // arrival below it is dropped (the client would drop it too).
    rt.bus.publish([alice.userId], messageEvent(conversation, 6));
    await client.waitFor('message.created', 5);
    rt.bus.publish([alice.userId], messageEvent(conversation, 5));
    rt.bus.publish([alice.userId], messageEvent(conversation, 7));
    await client.waitFor('message.created', 6);
    await client.roundTrip();
    const versions = client.framesOf('message.created').map((frame) => frame.version);
    expect(versions).toEqual([1, 2, 3, 4, 6, 7]);
    client.close();
  });

  it('drops a read of a conversation that a later read overtook (a read never moves back)', async () => {
    const client = await rt.connect(alice);
    const [conversation, other] = [newConversation(), newConversation()];
    const read = (id: string, seq: number, unread: number) => ({
      type: 'conversation.read',
      conversation_id: id,
      last_read_seq: seq,
      unread_count: unread,
    });
    for (const event of [read(conversation, 5, 2), read(conversation, 3, 4), read(other, 1, 0)]) {
      rt.bus.publish([alice.userId], event);
    }
    // The same position again goes out: its unread count may be newer (a message deleted since).
    rt.bus.publish([alice.userId], read(conversation, 5, 1));
    await client.waitFor('conversation.read', 3);
    await client.roundTrip();
    expect(client.framesOf('conversation.read')).toEqual([
      read(conversation, 5, 2),
      read(other, 1, 0),
      read(conversation, 5, 1),
    ]);
    client.close();
  });

  it('never writes an internal or unknown event to a client', async () => {
    const client = await rt.connect(alice);
    rt.bus.publish([alice.userId], { type: 'session.revoked', session_ids: ['another-session'] });
    rt.bus.publish([alice.userId], { type: 'some.future.internal', secret: 'x' });
    rt.bus.publish([alice.userId], messageEvent(newConversation(), 1));
    await client.waitFor('message.created');
    expect(client.frames.map((frame) => frame.type)).toEqual(['ready', 'message.created']);
    client.close();
  });

  it('sends resync_required to every authenticated socket when events may have been lost', async () => {
    const sockets = [await rt.connect(alice), await rt.connect(bob)];
    const unauthenticated = await rt.open();
    rt.bus.resync();
    for (const client of sockets) expect(await client.waitFor('resync_required')).toHaveLength(1);
    unauthenticated.send({ type: 'auth', access_token: alice.accessToken });
    await unauthenticated.waitFor('ready');
    expect(unauthenticated.framesOf('resync_required')).toEqual([]);
    for (const client of [...sockets, unauthenticated]) client.close();
  });

  it('after a resync, closes the sockets of sessions that ended while events were lost', async () => {
    const dave = await rt.t.register();
    const kept = await rt.t.login(dave.email, dave.password);
    // Two sockets of the session that ends, one of the session that stays.
    const lostEnd = [await rt.connect(dave), await rt.connect(dave)];
    const keptSocket = await rt.connect(kept);
    // The session ends without its event reaching this instance (as when Redis was away).
    const sessionId = await rt.sessionIdOf(dave);
    await rt.t.db.deleteFrom('sessions').where('id', '=', sessionId).execute();
    rt.bus.resync();
    for (const client of lostEnd) expect((await client.waitClosed()).code).toBe(4401);
    await keptSocket.roundTrip();
    expect(keptSocket.framesOf('resync_required')).toHaveLength(1);
    keptSocket.close();
  });

  it('closes a client that stops reading with 4008 once over 1 MiB waits, and keeps the others', async () => {
    const carol = await rt.t.register();
    const stalled = await rt.connect(carol);
    const healthy = await Promise.all([rt.connect(alice), rt.connect(bob)]);
    const delivered = () => rt.metric('chat_events_delivered_total', '{type="message.created"}');
    const deliveredBefore = await delivered();
    stalled.ws.pause(); // stops reading its TCP socket: the kernel's buffers fill, then ours
    // 64 MiB in all: more than the kernel's socket buffers can hold (tcp_rmem and tcp_wmem allow
    // 32 + 4 MiB at most here), so more than 1 MiB must wait in the server for this client.
    const big = 'x'.repeat(64 * 1024);
    const sent = 1024 / 16;
    const [shared, stalledOnly] = [newConversation(), newConversation()];
    // Straight to this instance's sockets: backpressure is theirs; through Redis, 64 MiB for one
    // subscriber would pass its pub/sub output buffer limit, and Redis would drop the connection.
    for (let version = 1; version <= sent; version += 1) {
      rt.bus.deliverHere([alice.userId, bob.userId], messageEvent(shared, version));
      for (let i = 0; i < 16; i += 1) {
        const big16 = messageEvent(stalledOnly, (version - 1) * 16 + i + 1, big);
        rt.bus.deliverHere([carol.userId], big16);
      }
      await sleep(1);
    }
    // The readers got everything, in order, and are still open.
    for (const client of healthy) {
      const got = await client.waitFor('message.created', sent);
      expect(got.map((frame) => frame.version)).toEqual(
        Array.from({ length: sent }, (_, i) => i + 1),
      );
      await client.roundTrip();
    }
    stalled.ws.resume();
    expect((await stalled.waitClosed()).code).toBe(4008);
    // What waited for it was capped: the server stopped writing to it at the limit.
    expect(stalled.framesOf('message.created').length).toBeLessThan(sent * 16);
    // Counted as delivered: what was written, not what was refused at the limit or after it.
    expect((await delivered()) - deliveredBefore).toBe(
      2 * sent + stalled.framesOf('message.created').length,
    );
    await expect
      .poll(() => rt.metric('chat_sockets_closed_total', '{reason="slow_reader"}'))
      .toBe(1);
    for (const client of healthy) client.close();
  });

  it('reports deliveries, their latency and open sockets in /metrics', async () => {
    const client = await rt.connect(alice);
    rt.bus.publish([alice.userId], messageEvent(newConversation(), 1));
    await client.waitFor('message.created');
    expect(
      await rt.metric('chat_events_delivered_total', '{type="message.created"}'),
    ).toBeGreaterThan(0);
    // One latency observation per delivery, of any type (other tests here deliver reads too).
    const text = (await rt.t.call('GET', '/metrics')).body;
    const delivered = text
      .split('\n')
      .filter((line) => line.startsWith('chat_events_delivered_total{'))
      .reduce((sum, line) => sum + Number(line.split(' ')[1]), 0);
    expect(await rt.metric('chat_delivery_latency_seconds_count')).toBe(delivered);
    expect(await rt.metric('chat_sockets_open')).toBeGreaterThanOrEqual(1);
    await rt.t.post('/api/logout', {}, { token: (await rt.t.register()).accessToken });
    expect(
      await rt.metric('chat_events_published_total', '{type="session.revoked"}'),
    ).toBeGreaterThanOrEqual(1);
    client.close();
  });
});
