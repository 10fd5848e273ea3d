import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../../src/events/bus.js';
import { backends } from '../../helpers/backends.js';
import { RealtimeApp } from './fixture.js';

/** A synthetic chat event, as the Chat group publishes them after commit. */
function messageEvent(conversationId: string, version: number, text = 'secret') {
  return {
    type: 'message.created',
    conversation_id: conversationId,
    version,
    chat_message: { id: `m-${version}`, seq: version, text },
  };
}

/**
 * A socket counts among its user's (and its user's events reach the delivery) as soon as its
 * token's signature names the user; its session is looked up afterwards. An event that arrives
 * in between must not be written to it: its session may have ended (then the socket closes with
 * 4401 and must have seen nothing), and otherwise `ready` comes first.
 */
describe.each(backends)('chat socket: events before ready ($name)', (backend) => {
  let rt: RealtimeApp;

  beforeAll(async () => {
    rt = await RealtimeApp.start(backend);
    // The moment a user's subscription takes hold (before the session lookup), an event arrives,
    // and this instance hears that events may have been lost (a resync).
    const subscribe: EventBus['subscribe'] = rt.bus.subscribe;
    rt.bus.subscribe = async (userId, listener) => {
      const stop = await subscribe(userId, listener);
      listener({ userId, event: messageEvent(randomUUID(), 1), publishedAt: Date.now() });
      rt.bus.resync();
      return stop;
    };
  });
  afterAll(() => rt?.close());

  it('are never written to the socket of a session that has ended', async () => {
    const carol = await rt.t.register();
    await rt.t.post('/api/logout', {}, { token: carol.accessToken });
    const client = await rt.open({ token: carol.accessToken });
    expect((await client.waitClosed()).code).toBe(4401);
    expect(client.frames).toEqual([]);
  });

  it('are never written before ready', async () => {
    const dave = await rt.t.register();
    const client = await rt.open({ token: dave.accessToken });
    await client.waitFor('ready');
    await client.roundTrip();
    expect(client.frames[0]?.type).toBe('ready');
    expect(client.framesOf('message.created')).toEqual([]);
    // The client refetches after ready anyway: a resync before it is not its to see.
    expect(client.framesOf('resync_required')).toEqual([]);
    client.close();
  });
});
