import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../../helpers/backends.js';
import { STRONG_PASSWORD } from '../../helpers/test-app.js';
import { creator } from '../../influencer/support.js';
import { ChatClient, newKey, openConversation, start, twoMembers } from '../fixture.js';
import { RealtimeApp } from './fixture.js';
import type { SocketClient } from './socket-client.js';

const MANY = { limit: 1_000, windowMs: 60_000 };

/** What a socket got of one conversation's message events: `[type, version]` in order. */
function messageEvents(client: SocketClient, conversationId: string) {
  return client.frames
    .filter((f) => f.type.startsWith('message.') && f.conversation_id === conversationId)
    .map((f) => [f.type, f.version]);
}

describe.each(backends)('chat socket: the Chat group’s events ($name)', (backend) => {
  let rt: RealtimeApp;
  beforeAll(async () => {
    rt = await RealtimeApp.start(backend, {
      overrides: { chatLimits: { chatSendsPerConversation: MANY, chatSendsPerUser: MANY } },
    });
  });
  afterAll(() => rt?.close());

  /** Two members with two sockets each, and a third account with a socket. */
  async function members() {
    const { fan, influencer, id } = await twoMembers(rt.t);
    const sockets = {
      fan: [await rt.connect(fan.account), await rt.connect(fan.account)],
      influencer: [await rt.connect(influencer.account), await rt.connect(influencer.account)],
      outsider: await rt.connect(await rt.t.register()),
    };
    return { fan, influencer, id, sockets };
  }

  it('a send, an edit and a delete reach every socket of both members once, in order, and nobody else', async () => {
    const { fan, id, sockets } = await members();
    const sent = await fan.sent(id, 'hello');
    const edited = (await fan.edit(sent.id, 'hello again')).json().chat_message;
    const deleted = (await fan.delete(sent.id)).json().chat_message;
    const expected = [
      ['message.created', 1],
      ['message.updated', 2],
      ['message.deleted', 3],
    ];
    for (const client of [...sockets.fan, ...sockets.influencer]) {
      await client.waitFor('message.deleted');
      await client.roundTrip();
      expect(messageEvents(client, id)).toEqual(expected);
    }
    // Each frame carries the message as its member sees it: the sender's with its
    // client_message_id, the peer's without (toEqual takes undefined as absent).
    expect(sockets.fan[0]!.framesOf('message.created')[0]?.chat_message).toEqual(sent);
    expect(sockets.fan[1]!.framesOf('message.updated')[0]?.chat_message).toEqual(edited);
    const seenByPeer = sockets.influencer[0]!.framesOf('message.created')[0]?.chat_message;
    expect(seenByPeer).toEqual({ ...sent, client_message_id: undefined });
    expect(seenByPeer).not.toHaveProperty('client_message_id');
    expect(sockets.influencer[1]!.framesOf('message.deleted')[0]?.chat_message).toMatchObject({
      id: deleted.id,
      deleted: true,
      text: null,
    });
    await sockets.outsider.roundTrip();
    expect(sockets.outsider.frames.map((f) => f.type)).toEqual(['ready', 'pong']);
  });

  it('concurrent sends of both members reach each socket once, in version order', async () => {
    const { fan, influencer, id, sockets } = await members();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? fan : influencer).sent(id, `m${i}`)),
    );
    const versions = Array.from({ length: 20 }, (_, i) => i + 1);
    for (const client of [...sockets.fan, ...sockets.influencer]) {
      const got = await client.waitFor('message.created', 20);
      await client.roundTrip();
      expect(got.map((f) => f.version)).toEqual(versions);
      expect(client.framesOf('message.created')).toHaveLength(20);
    }
  });

  it("a read reaches every socket of the reader and never the peer's", async () => {
    const { fan, influencer, id, sockets } = await members();
    await fan.sent(id, 'one');
    await fan.sent(id, 'two');
    await influencer.read(id);
    for (const client of sockets.influencer) {
      expect(await client.waitFor('conversation.read')).toEqual([
        { type: 'conversation.read', conversation_id: id, last_read_seq: 2, unread_count: 0 },
      ]);
    }
    for (const client of sockets.fan) {
      await client.waitFor('message.created', 2);
      await client.roundTrip();
      expect(client.framesOf('conversation.read')).toEqual([]);
    }
  });

  it('a replayed send emits nothing', async () => {
    const { fan, id, sockets } = await members();
    const key = newKey();
    expect((await fan.send(id, 'once', key)).statusCode).toBe(201);
    const replayed = await fan.send(id, 'once', key);
    expect(replayed.statusCode).toBe(200);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    await fan.sent(id, 'next'); // a later event proves the replay's would have come before it
    for (const client of [...sockets.fan, ...sockets.influencer]) {
      await client.waitFor('message.created', 2);
      await client.roundTrip();
      expect(messageEvents(client, id)).toEqual([
        ['message.created', 1],
        ['message.created', 2],
      ]);
    }
  });

  it("deleting an account closes its sockets and sends its tombstones to the peer's", async () => {
    const { fan, id, sockets } = await members();
    await fan.sent(id, 'one');
    await fan.sent(id, 'two');
    const deleted = await fan.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });
    expect(deleted.statusCode).toBe(200);
    for (const client of sockets.fan) expect((await client.waitClosed()).code).toBe(4401);
    for (const client of sockets.influencer) {
      const tombstones = await client.waitFor('message.deleted', 2);
      expect(tombstones.map((f) => f.version)).toEqual([3, 4]);
      expect(tombstones.map((f) => f.chat_message)).toEqual([
        expect.objectContaining({ seq: 1, sender_id: null, deleted: true, text: null }),
        expect.objectContaining({ seq: 2, sender_id: null, deleted: true, text: null }),
      ]);
    }
  });
});

describe.each(backends)('chat socket: typing ($name)', (backend) => {
  let rt: RealtimeApp;
  let framesSent = 0;
  let fences = 0;
  beforeAll(async () => {
    rt = await RealtimeApp.start(backend);
  });
  afterAll(() => rt?.close());

  async function typingPair() {
    const { fan, influencer, id } = await twoMembers(rt.t);
    const fanSockets = [await rt.connect(fan.account), await rt.connect(fan.account)];
    const peerSockets = [
      await rt.connect(influencer.account),
      await rt.connect(influencer.account),
    ];
    return { fan, influencer, id, fanSockets, peerSockets };
  }

  function sendTyping(socket: SocketClient, conversationId: string): void {
    socket.send({ type: 'typing', conversation_id: conversationId });
    framesSent += 1;
  }

  async function framesHandled(): Promise<number> {
    const outcomes = ['relayed', 'throttled', 'refused', 'busy'];
    const counts = await Promise.all(
      outcomes.map((o) => rt.metric('chat_typing_frames_total', `{outcome="${o}"}`)),
    );
    return counts.reduce((sum, n) => sum + n, 0);
  }

  /**
   * Waits until the server has decided on every typing frame sent, then until whatever it
   * published has reached `sockets`: a fence event published after it on each user's channel
   * (same connection, same channel: it cannot overtake) has arrived.
   */
  async function settled(sockets: Array<[SocketClient, string]>): Promise<void> {
    await expect.poll(framesHandled).toBe(framesSent);
    fences += 1;
    const fence = `fence-${fences}`;
    for (const userId of new Set(sockets.map(([, id]) => id))) {
      rt.bus.publish([userId], { type: 'typing', conversation_id: fence, user_id: 'test' });
    }
    for (const [socket] of sockets) {
      await expect
        .poll(() => socket.framesOf('typing').some((f) => f.conversation_id === fence))
        .toBe(true);
    }
  }

  /** The typing frames a socket got, fences aside. */
  const typingOf = (socket: SocketClient) =>
    socket.framesOf('typing').filter((f) => !String(f.conversation_id).startsWith('fence-'));

  it('costs at most 20 lookups in 10 s per user, however many conversations its frames name', async () => {
    const { fanSockets } = await typingPair();
    const count = (outcome: string) =>
      rt.metric('chat_typing_frames_total', `{outcome="${outcome}"}`);
    const [refused, throttled] = [await count('refused'), await count('throttled')];
    const clock = rt.t.clock.freeze(); // all 30 within the 10 s, however slow the machine
    try {
      for (let i = 0; i < 30; i++) {
        sendTyping(fanSockets[0]!, randomUUID()); // no such conversation: a lookup each, if counted
        await expect.poll(framesHandled).toBe(framesSent);
      }
    } finally {
      clock.thaw();
    }
    expect((await count('refused')) - refused).toBe(20);
    expect((await count('throttled')) - throttled).toBe(10);
  });

  it("reaches the peer's sockets, not the typist's own, and at most once per 3 s", async () => {
    const { fan, influencer, id, fanSockets, peerSockets } = await typingPair();
    const everyone: Array<[SocketClient, string]> = [
      ...fanSockets.map((s): [SocketClient, string] => [s, fan.userId]),
      ...peerSockets.map((s): [SocketClient, string] => [s, influencer.userId]),
    ];
    // The id in upper case is the same conversation: the same limit, the event's id lower-case.
    for (const sent of [id, id.toUpperCase(), id]) sendTyping(fanSockets[0]!, sent);
    sendTyping(fanSockets[1]!, id); // the same user on another socket
    await settled(everyone);
    const once = [{ type: 'typing', conversation_id: id, user_id: fan.userId }];
    for (const client of peerSockets) expect(typingOf(client)).toEqual(once);

    rt.t.clock.advance(3_000);
    sendTyping(fanSockets[1]!, id);
    await settled(everyone);
    for (const client of peerSockets) expect(typingOf(client)).toEqual([...once, ...once]);
    for (const client of fanSockets) expect(typingOf(client)).toEqual([]);
  });

  it('in two conversations at once reaches both peers: one conversation never holds up another', async () => {
    const { fan, influencer, id, fanSockets, peerSockets } = await typingPair();
    const second = await rt.t.register();
    const other = await openConversation(rt.t, fan.account, second);
    const secondSocket = await rt.connect(second);
    sendTyping(fanSockets[0]!, id);
    sendTyping(fanSockets[0]!, other);
    await settled([
      [peerSockets[0]!, influencer.userId],
      [secondSocket, second.userId],
    ]);
    expect(typingOf(peerSockets[0]!)).toEqual([
      { type: 'typing', conversation_id: id, user_id: fan.userId },
    ]);
    expect(typingOf(secondSocket)).toEqual([
      { type: 'typing', conversation_id: other, user_id: fan.userId },
    ]);
  });

  it('is dropped for a conversation the typist is not in, or one that does not exist', async () => {
    const { influencer, id, peerSockets } = await typingPair();
    const outsiderAccount = await rt.t.register();
    const outsider = await rt.connect(outsiderAccount);
    for (const target of [id, 'not-a-conversation', '00000000-0000-4000-8000-000000000000']) {
      sendTyping(outsider, target);
      await expect.poll(framesHandled).toBe(framesSent); // one at a time: none is "busy"
    }
    await settled(peerSockets.map((s) => [s, influencer.userId]));
    for (const client of peerSockets) expect(typingOf(client)).toEqual([]);
    expect(await rt.metric('chat_typing_frames_total', '{outcome="refused"}')).toBeGreaterThan(2);
  });

  it('is dropped where DM policy keeps the fan from sending, until the influencer answers', async () => {
    const made = await creator(rt.t, { dm_policy: 'everyone' });
    const influencer = new ChatClient(rt.t, made.account);
    const fan = new ChatClient(rt.t, await rt.t.register());
    const id = (await start(fan, influencer.userId)).json().conversation.id as string;
    await fan.sent(id, 'hello');
    await influencer.call('PATCH', '/api/influencers/me', { dm_policy: 'nobody' });
    const [fanSocket, peerSocket] = [await rt.connect(fan.account), await rt.connect(made.account)];
    const everyone: Array<[SocketClient, string]> = [
      [fanSocket, fan.userId],
      [peerSocket, influencer.userId],
    ];
    sendTyping(fanSocket, id);
    await settled(everyone);
    expect(typingOf(peerSocket)).toEqual([]);

    // The influencer's own typing is never bound by its policy; its first message accepts.
    sendTyping(peerSocket, id);
    await influencer.sent(id, 'hi');
    rt.t.clock.advance(3_000);
    sendTyping(fanSocket, id);
    await settled(everyone);
    expect(typingOf(fanSocket)).toEqual([
      { type: 'typing', conversation_id: id, user_id: influencer.userId },
    ]);
    expect(typingOf(peerSocket)).toEqual([
      { type: 'typing', conversation_id: id, user_id: fan.userId },
    ]);
  });

  it('is dropped once the peer has deleted the account: refused, published to nobody', async () => {
    const { influencer, id, fanSockets } = await typingPair();
    await influencer.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });
    const refused = () => rt.metric('chat_typing_frames_total', '{outcome="refused"}');
    const published = () => rt.metric('chat_events_published_total', '{type="typing"}');
    const [refusedBefore, publishedBefore] = [await refused(), await published()];
    sendTyping(fanSockets[0]!, id);
    await expect.poll(framesHandled).toBe(framesSent);
    expect((await refused()) - refusedBefore).toBe(1);
    expect(await published()).toBe(publishedBefore);
  });

  it('is dropped under a block, both ways, and flows again once it is lifted', async () => {
    const { fan, influencer, id, fanSockets, peerSockets } = await typingPair();
    const everyone: Array<[SocketClient, string]> = [
      [fanSockets[0]!, fan.userId],
      [peerSockets[0]!, influencer.userId],
    ];
    await influencer.call('PUT', `/api/blocks/${fan.userId}`);
    sendTyping(fanSockets[0]!, id);
    sendTyping(peerSockets[0]!, id);
    await settled(everyone);
    expect(typingOf(fanSockets[0]!)).toEqual([]);
    expect(typingOf(peerSockets[0]!)).toEqual([]);

    rt.t.clock.advance(3_000);
    await influencer.call('DELETE', `/api/blocks/${fan.userId}`);
    sendTyping(fanSockets[0]!, id);
    await settled(everyone);
    expect(typingOf(peerSockets[0]!)).toEqual([
      { type: 'typing', conversation_id: id, user_id: fan.userId },
    ]);
  });
});
