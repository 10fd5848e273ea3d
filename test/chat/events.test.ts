import SQLite from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusEvent } from '../../src/events/bus.js';
import { MemoryEventBus } from '../../src/events/memory-bus.js';
import { backends } from '../helpers/backends.js';
import { LockHolder } from '../helpers/lock-waits.js';
import { TestApp } from '../helpers/test-app.js';
import type { ChatClient } from './fixture.js';
import { newKey, twoMembers } from './fixture.js';

describe.each(backends)('chat events ($name)', (backend) => {
  let t: TestApp;
  const bus = new MemoryEventBus(pino({ level: 'silent' }));
  beforeAll(async () => {
    t = await TestApp.start(backend, { overrides: { events: bus } });
  });
  afterAll(() => t.close());

  /** Records every event published for `clients` from now on, by user. */
  async function listen(...clients: ChatClient[]) {
    const got = new Map<string, BusEvent[]>(clients.map((c) => [c.userId, []]));
    for (const client of clients)
      await bus.subscribe(client.userId, (d) => got.get(d.userId)?.push(d.event));
    return (client: ChatClient) => got.get(client.userId) ?? [];
  }

  it('a send, an edit and a delete each hand one event to both members, after commit', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const eventsOf = await listen(fan, influencer);
    const sent = await fan.sent(id, 'hello');
    const edited = (await fan.edit(sent.id, 'hello again')).json().chat_message;
    const deleted = (await fan.delete(sent.id)).json().chat_message;
    const expected = [
      { type: 'message.created', version: 1, chat_message: sent },
      { type: 'message.updated', version: 2, chat_message: edited },
      { type: 'message.deleted', version: 3, chat_message: deleted },
    ].map((event) => ({ ...event, conversation_id: id }));
    expect(eventsOf(fan)).toEqual(expected);
    // The peer's copy has no client_message_id.
    expect(eventsOf(influencer)).toEqual(
      expected.map(({ chat_message: { client_message_id: _, ...message }, ...event }) => ({
        ...event,
        chat_message: message,
      })),
    );
  });

  // SQLite can be read synchronously from a second connection, inside the listener itself: an
  // event published before its commit would see the row as it was.
  it.runIf(backend.name === 'sqlite')(
    'each event is published only once its change is visible in the database',
    async () => {
      const { fan, influencer, id } = await twoMembers(t);
      const path = (t.backend.env.DATABASE_URL as string).slice('sqlite:'.length);
      const reader = new SQLite(path, { readonly: true });
      const versionOf = reader.prepare('select version from chat_messages where id = ?');
      const seen: [number, number | undefined][] = [];
      await bus.subscribe(influencer.userId, (delivery) => {
        const message = delivery.event.chat_message as { id: string; version: number };
        const row = versionOf.get(message.id) as { version: number } | undefined;
        seen.push([message.version, row?.version]);
      });
      try {
        const sent = await fan.sent(id, 'a');
        await fan.edit(sent.id, 'b');
        await fan.delete(sent.id);
        expect(seen).toEqual([
          [1, 1],
          [2, 2],
          [3, 3],
        ]);
      } finally {
        reader.close();
      }
    },
  );

  it('writes that roll back publish nothing: concurrent deletes give one event', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const sent = await fan.sent(id, 'a');
    const eventsOf = await listen(fan, influencer);
    await Promise.all(Array.from({ length: 8 }, () => fan.delete(sent.id)));
    expect(eventsOf(fan).map((e) => [e.type, e.version])).toEqual([['message.deleted', 2]]);
    expect(eventsOf(influencer)).toHaveLength(1);
  });

  it('no event for a replay, a refused send or edit, a repeated delete, or another conversation', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const other = await twoMembers(t);
    const eventsOf = await listen(fan, influencer);
    const key = newKey();
    const sent = (await fan.send(id, 'once', key)).json().chat_message;
    expect((await fan.send(id, 'once', key)).statusCode).toBe(200); // replay
    expect((await fan.send(id, 'other text', key)).statusCode).toBe(422);
    expect((await fan.send(id, '   ')).statusCode).toBe(400);
    expect((await influencer.edit(sent.id, 'not mine')).statusCode).toBe(403);
    await fan.delete(sent.id);
    await fan.delete(sent.id); // repeated: no change
    expect((await fan.edit(sent.id, 'deleted')).statusCode).toBe(409);
    await other.fan.sent(other.id, 'elsewhere');
    expect(eventsOf(fan).map((e) => e.type)).toEqual(['message.created', 'message.deleted']);
    expect(eventsOf(influencer).map((e) => e.type)).toEqual(['message.created', 'message.deleted']);
  });

  it('a send refused by a limit or a block publishes nothing', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    for (let i = 0; i < 10; i++) await fan.sent(id, `m${i}`);
    const eventsOf = await listen(fan, influencer);
    expect((await fan.send(id, 'over the limit')).statusCode).toBe(429);
    await influencer.call('PUT', `/api/blocks/${fan.userId}`);
    expect((await influencer.send(id, 'blocked')).statusCode).toBe(403);
    expect([...eventsOf(fan), ...eventsOf(influencer)]).toEqual([]);
  });

  it('20 concurrent sends of one key: exactly one message.created per member', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const eventsOf = await listen(fan, influencer);
    const key = newKey();
    await Promise.all(Array.from({ length: 20 }, () => fan.send(id, 'at once', key)));
    expect(eventsOf(fan)).toHaveLength(1);
    expect(eventsOf(influencer)).toHaveLength(1);
  });

  it('a read that moves last_read_seq goes to the reader only', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    await fan.sent(id, 'a');
    await fan.sent(id, 'b');
    const eventsOf = await listen(fan, influencer);
    await influencer.read(id, 1);
    await influencer.read(id, 1); // moves nothing: no event
    await influencer.read(id);
    expect(eventsOf(influencer)).toEqual([
      { type: 'conversation.read', conversation_id: id, last_read_seq: 1, unread_count: 1 },
      { type: 'conversation.read', conversation_id: id, last_read_seq: 2, unread_count: 0 },
    ]);
    expect(eventsOf(fan)).toEqual([]);
  });

  it("a send marks the sender's side read: the sender's devices hear of it when it passed the peer's messages", async () => {
    const { fan, influencer, id } = await twoMembers(t);
    await fan.sent(id, 'a');
    await fan.sent(id, 'b');
    const eventsOf = await listen(fan, influencer);
    const reads = (client: ChatClient) =>
      eventsOf(client).filter((event) => event.type === 'conversation.read');
    await influencer.sent(id, 'answering both');
    await influencer.sent(id, 'and once more'); // passes nothing of the fan's: no read
    expect(reads(influencer)).toEqual([
      { type: 'conversation.read', conversation_id: id, last_read_seq: 3, unread_count: 0 },
    ]);
    expect(reads(fan)).toEqual([]);
    expect(await influencer.unread()).toMatchObject({ total_unread_count: 0 });
  });

  // The read's answer (its unread count) is asked after the move: if that fails, the move must not
  // stay committed without its event, or the retry moves nothing and the reader's other devices
  // never hear of the read. A killed connection while the count waits for a lock is such a failure.
  it.runIf(backend.name.startsWith('postgres'))(
    'a read that fails after moving last_read_seq keeps no move: its retry publishes the event',
    async () => {
      const { fan, influencer, id } = await twoMembers(t);
      await fan.sent(id, 'a');
      const eventsOf = await listen(influencer);
      const holder = await LockHolder.connect(t.backend.env.DATABASE_URL!);
      try {
        await holder.hold('lock table chat_messages in access exclusive mode', []);
        const reading = influencer.call('POST', `/api/chat/conversations/${id}/read`, {});
        await holder.untilWaiting('count(');
        await holder.terminateWaiting('count(');
        expect((await reading).statusCode).toBe(503);
      } finally {
        await holder.release();
        await holder.end();
      }
      expect(await influencer.read(id)).toEqual({ last_read_seq: 1, unread_count: 0 });
      expect(eventsOf(influencer)).toEqual([
        { type: 'conversation.read', conversation_id: id, last_read_seq: 1, unread_count: 0 },
      ]);
    },
  );

  // Concurrent requests finish their commits in any order on PostgreSQL, so the bus may see v3
  // before v2; each socket gets them in version order (chat/realtime/ordering.ts, tested there).
  it('concurrent sends publish exactly one event per version', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const eventsOf = await listen(fan);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? fan : influencer).send(id, `m${i}`)),
    );
    const created = eventsOf(fan).filter((e) => e.type === 'message.created');
    const versions = created.map((e) => e.version as number);
    expect(versions.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });
});
