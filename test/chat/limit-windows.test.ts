import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { creator } from '../influencer/support.js';
import { ChatClient, errorOf, newKey, openConversation, start, twoMembers } from './fixture.js';
import { RealtimeApp } from './realtime/fixture.js';
import type { SocketClient } from './realtime/socket-client.js';

/**
 * The edges of API.md's limits and values. A burst fills a window at one frozen instant; then the
 * next attempt is refused with the whole window as Retry-After, is still refused (Retry-After 1)
 * 1 ms before the window ends, and is allowed when it ends.
 */
describe.each(backends)('limit windows and defaults ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  function expectRefused(response: LightMyRequestResponse, retryAfter: number) {
    expect(errorOf(response)).toEqual([429, 'rate_limited']);
    expect(response.headers['retry-after']).toBe(String(retryAfter));
  }

  /** Fills a window with `burst` at a frozen instant, then checks both of its sides. */
  async function expectWindow(
    windowMs: number,
    burst: () => Promise<void>,
    attempt: () => Promise<LightMyRequestResponse>,
    allowed: number,
  ) {
    const clock = t.clock.freeze();
    try {
      await burst();
      expectRefused(await attempt(), windowMs / 1000);
      t.clock.advance(windowMs - 1);
      expectRefused(await attempt(), 1);
      t.clock.advance(1);
      const response = await attempt();
      expect(response.statusCode, response.body).toBe(allowed);
    } finally {
      clock.thaw();
    }
  }

  it('follow and unfollow: 100 changes an hour per user', async () => {
    const star = await creator(t);
    const fan = new ChatClient(t, await t.register());
    const change = (method: 'PUT' | 'DELETE') =>
      fan.call(method, `/api/influencers/${star.id}/follow`);
    await expectWindow(
      3_600_000,
      async () => {
        for (let i = 0; i < 50; i++) {
          expect((await change('PUT')).statusCode).toBe(200);
          expect((await change('DELETE')).statusCode).toBe(200);
        }
      },
      async () => {
        await fan.renewToken(); // access tokens last 15 minutes
        return change('PUT');
      },
      200,
    );
  });

  it('10 sends per 10 s per user and conversation', async () => {
    const { fan, id } = await twoMembers(t);
    await expectWindow(
      10_000,
      async () => {
        for (let i = 0; i < 10; i++) await fan.sent(id, `m${i}`);
      },
      () => fan.send(id, 'one more'),
      201,
    );
  });

  it('60 sends a minute per user', async () => {
    const fan = new ChatClient(t, await t.register());
    const ids: string[] = [];
    for (let i = 0; i < 7; i++)
      ids.push(await openConversation(t, fan.account, await t.register()));
    await expectWindow(
      60_000,
      async () => {
        for (let i = 0; i < 60; i++) await fan.sent(ids[i % 7] as string, `m${i}`); // ≤ 9 each
      },
      () => fan.send(ids[6] as string, 'one more'),
      201,
    );
  });

  it('20 new conversations an hour per user', async () => {
    const fan = new ChatClient(t, await t.register());
    const influencers: string[] = [];
    for (let i = 0; i < 21; i++) influencers.push((await creator(t, { dm_policy: 'everyone' })).id);
    await expectWindow(
      3_600_000,
      async () => {
        for (const id of influencers.slice(0, 20))
          expect((await start(fan, id)).statusCode).toBe(201);
      },
      async () => {
        await fan.renewToken();
        return start(fan, influencers[20] as string);
      },
      201,
    );
  });

  it('POST …/messages answers 201 {message: "Message sent", chat_message}, and so does a replay', async () => {
    const { fan, id } = await twoMembers(t);
    const key = newKey();
    for (const status of [201, 200]) {
      const response = await fan.send(id, 'hello', key);
      expect(response.statusCode).toBe(status);
      const body = response.json();
      expect(Object.keys(body).sort()).toEqual(['chat_message', 'message']);
      expect(body.message).toBe('Message sent');
    }
  });

  it('GET …/changes without a limit answers 100 changes, and has_more', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    for (let i = 0; i < 105; i++) {
      await (i % 2 === 0 ? fan : influencer).sent(id, `m${i}`);
      if (i % 20 === 19) t.clock.advance(60_000); // 10 each, then past both send windows
    }
    const page = (await fan.get(`/api/chat/conversations/${id}/changes?since_version=0`)).json();
    expect(page.messages).toHaveLength(100);
    expect(page.has_more).toBe(true);
    expect(page.version).toBe(page.messages[99].version);
  });
});

describe.each(backends)('typing window ($name)', (backend) => {
  let rt: RealtimeApp;
  beforeAll(async () => {
    rt = await RealtimeApp.start(backend);
  });
  afterAll(() => rt?.close());

  const count = (outcome: string) =>
    rt.metric('chat_typing_frames_total', `{outcome="${outcome}"}`);

  /** Sends a typing frame and answers what the server decided: relayed or throttled. */
  async function typing(socket: SocketClient, conversationId: string) {
    const [relayed, throttled] = [await count('relayed'), await count('throttled')];
    socket.send({ type: 'typing', conversation_id: conversationId });
    const decided = async () =>
      (await count('relayed')) - relayed + (await count('throttled')) - throttled;
    await expect.poll(decided).toBe(1);
    return (await count('relayed')) > relayed ? 'relayed' : 'throttled';
  }

  it('at most one per 3 s per user and conversation', async () => {
    const { fan, influencer, id } = await twoMembers(rt.t);
    const typist = await rt.connect(fan.account);
    const peer = await rt.connect(influencer.account);
    const clock = rt.t.clock.freeze();
    try {
      expect(await typing(typist, id)).toBe('relayed');
      expect(await typing(typist, id)).toBe('throttled');
      rt.t.clock.advance(2_999);
      expect(await typing(typist, id)).toBe('throttled');
      rt.t.clock.advance(1);
      expect(await typing(typist, id)).toBe('relayed');
    } finally {
      clock.thaw();
    }
    await peer.waitFor('typing', 2);
    await peer.roundTrip();
    expect(peer.framesOf('typing')).toHaveLength(2);
  });
});
