import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { changesSince, twoMembers, type ChatClient, type ChatMessageBody } from './fixture.js';

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** Every message of a conversation, paged down from the newest with `before`. */
async function pageDown(client: ChatClient, id: string, limit: number) {
  const seqs: number[] = [];
  let url = `/api/chat/conversations/${id}/messages?limit=${limit}`;
  for (;;) {
    const page = (await client.get(url)).json();
    expect(page.messages.length).toBeLessThanOrEqual(limit);
    const pageSeqs = page.messages.map((m: ChatMessageBody) => m.seq);
    expect(pageSeqs).toEqual([...pageSeqs].sort((a, b) => a - b));
    // Each page lies strictly below the one before: a repeated row fails here, not in a loop
    // that never ends.
    if (seqs[0] !== undefined && pageSeqs.length > 0) expect(pageSeqs.at(-1)).toBeLessThan(seqs[0]);
    seqs.unshift(...pageSeqs);
    if (!page.has_more) return seqs;
    url = `/api/chat/conversations/${id}/messages?limit=${limit}&before=${pageSeqs[0]}`;
  }
}

/** Every message of a conversation, paged up from the oldest with `after`. */
async function pageUp(client: ChatClient, id: string, limit: number) {
  const seqs: number[] = [];
  let after = 0;
  for (;;) {
    const url = `/api/chat/conversations/${id}/messages?limit=${limit}&after=${after}`;
    const page = (await client.get(url)).json();
    const pageSeqs = page.messages.map((m: ChatMessageBody) => m.seq);
    if (pageSeqs.length > 0) expect(pageSeqs[0]).toBeGreaterThan(after);
    seqs.push(...pageSeqs);
    if (!page.has_more) return seqs;
    after = pageSeqs.at(-1);
  }
}

describe.each(backends)('order: seq, version and the changes feed ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('10 concurrent sends by each member get seqs exactly 1..20, and versions 1..20', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const responses = await Promise.all(
      range(20).map((i) => (i % 2 ? fan : influencer).send(id, `message ${i}`)),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(20).fill(201));
    const messages = responses.map((r) => r.json().chat_message as ChatMessageBody);
    expect(messages.map((m) => m.seq).sort((a, b) => a - b)).toEqual(range(20));
    for (const m of messages) expect(m.version).toBe(m.seq);
    const conversation = await fan.conversation(id);
    expect([conversation.last_seq, conversation.version]).toEqual([20, 20]);
    expect(await pageDown(fan, id, 7)).toEqual(range(20));
  });

  it('each create, edit and delete raises version by exactly one and stamps the message', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const first = await fan.sent(id, 'one');
    const second = await influencer.sent(id, 'two');
    expect([first.version, second.version]).toEqual([1, 2]);
    const edited = (await fan.edit(first.id, 'one, edited')).json().chat_message;
    expect(edited).toMatchObject({ version: 3, seq: 1, text: 'one, edited' });
    const deleted = (await influencer.delete(second.id)).json().chat_message;
    expect(deleted).toMatchObject({ version: 4, seq: 2, deleted: true, text: null });
    // A repeated delete, a read and a refused edit change nothing.
    await influencer.delete(second.id);
    await fan.read(id);
    expect((await fan.edit(second.id, 'not mine')).statusCode).toBe(403);
    expect((await fan.conversation(id)).version).toBe(4);
    const third = await fan.sent(id, 'three');
    expect([third.seq, third.version]).toEqual([3, 5]);
  });

  it('changes?since_version=v returns exactly what changed after v, in ascending version', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const a = await fan.sent(id, 'a'); // v1
    const b = await influencer.sent(id, 'b'); // v2
    const c = await fan.sent(id, 'c'); // v3
    await fan.edit(a.id, 'a2'); // v4: a now at version 4
    await influencer.delete(b.id); // v5: b now at version 5
    const all = await changesSince(fan, id, 0);
    expect(all.messages.map((m) => [m.id, m.version])).toEqual([
      [c.id, 3],
      [a.id, 4],
      [b.id, 5],
    ]);
    expect(all.version).toBe(5);
    const sinceThree = await changesSince(influencer, id, 3);
    expect(sinceThree.messages.map((m) => m.id)).toEqual([a.id, b.id]);
    expect(sinceThree.messages[0]).toMatchObject({ text: 'a2' });
    expect(sinceThree.messages[0]).not.toHaveProperty('client_message_id');
    expect(sinceThree.messages[1]).toMatchObject({ deleted: true, text: null });
    const none = (await fan.get(`/api/chat/conversations/${id}/changes?since_version=5`)).json();
    expect(none).toEqual({ messages: [], version: 5, has_more: false });
  });

  it('changes page with has_more, and the pages join up to the whole feed', async () => {
    const { fan, id } = await twoMembers(t);
    const sent: ChatMessageBody[] = [];
    for (let i = 0; i < 7; i++) sent.push(await fan.sent(id, `m${i}`));
    const first = (
      await fan.get(`/api/chat/conversations/${id}/changes?since_version=0&limit=3`)
    ).json();
    expect(first.messages.map((m: ChatMessageBody) => m.version)).toEqual([1, 2, 3]);
    expect([first.version, first.has_more]).toEqual([3, true]);
    const all = await changesSince(fan, id, 0, 3);
    expect(all.messages.map((m) => m.id)).toEqual(sent.map((m) => m.id));
    expect(all.version).toBe(7);
  });

  it('paging by before down and by after up lists every seq once, at any limit', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    for (const i of range(23)) {
      t.clock.advance(1_000); // within the limits: at most 10 sends per 10 s
      await (i % 3 ? fan : influencer).sent(id, `m${i}`);
    }
    const deleted = (await fan.get(`/api/chat/conversations/${id}/messages?after=4&limit=1`)).json()
      .messages[0];
    await (deleted.sender_id === fan.userId ? fan : influencer).delete(deleted.id);
    for (const limit of [1, 2, 5, 23, 100]) {
      expect(await pageDown(fan, id, limit)).toEqual(range(23));
      expect(await pageUp(influencer, id, limit)).toEqual(range(23));
    }
  });

  it('the newest page, after=0 and the edges', async () => {
    const { fan, id } = await twoMembers(t);
    const url = `/api/chat/conversations/${id}/messages`;
    expect((await fan.get(url)).json()).toEqual({ messages: [], has_more: false, last_seq: 0 });
    for (const i of range(5)) await fan.sent(id, `m${i}`);
    const newest = (await fan.get(`${url}?limit=2`)).json();
    expect(newest.messages.map((m: ChatMessageBody) => m.seq)).toEqual([4, 5]);
    expect([newest.has_more, newest.last_seq]).toEqual([true, 5]);
    const oldest = (await fan.get(`${url}?after=0&limit=2`)).json();
    expect(oldest.messages.map((m: ChatMessageBody) => m.seq)).toEqual([1, 2]);
    expect(oldest.has_more).toBe(true);
    expect((await fan.get(`${url}?before=1`)).json().messages).toEqual([]);
    expect((await fan.get(`${url}?after=5`)).json()).toMatchObject({
      messages: [],
      has_more: false,
    });
    // A page that ends exactly at the last message in its direction has no more beyond it.
    const exactly = async (query: string, seqs: number[]) => {
      const page = (await fan.get(`${url}?${query}`)).json();
      expect([page.messages.map((m: ChatMessageBody) => m.seq), page.has_more], query).toEqual([
        seqs,
        false,
      ]);
    };
    await exactly('limit=5', [1, 2, 3, 4, 5]);
    await exactly('after=0&limit=5', [1, 2, 3, 4, 5]);
    await exactly('before=3&limit=2', [1, 2]);
    await exactly('after=3&limit=2', [4, 5]);
  });

  it("a messages page's last_seq is the conversation's, whichever page was read", async () => {
    const { fan, id } = await twoMembers(t);
    for (const i of range(5)) await fan.sent(id, `m${i}`);
    for (const query of ['before=3&limit=1', 'after=0&limit=2', 'before=2', 'after=1&limit=1']) {
      const page = (await fan.get(`/api/chat/conversations/${id}/messages?${query}`)).json();
      expect(page.last_seq, query).toBe(5);
    }
  });

  it('a seq or since_version of any size is a position (≥ 0), never a validation error', async () => {
    const { fan, id } = await twoMembers(t);
    for (const i of range(3)) await fan.sent(id, `m${i}`);
    const base = `/api/chat/conversations/${id}`;
    const seqsOf = async (url: string) => {
      const response = await fan.get(url);
      expect(response.statusCode, response.body).toBe(200);
      return response.json().messages.map((m: ChatMessageBody) => m.seq);
    };
    for (const huge of ['2147483647', '10000000000', '9'.repeat(400)]) {
      expect(await seqsOf(`${base}/messages?before=${huge}`)).toEqual([1, 2, 3]);
      expect(await seqsOf(`${base}/messages?after=${huge}`)).toEqual([]);
      expect(await seqsOf(`${base}/changes?since_version=${huge}`)).toEqual([]);
    }
  });

  it.each([
    ['before and after together', 'before=5&after=1', 'after'],
    ['a limit of 0', 'limit=0', 'limit'],
    ['a limit of 101', 'limit=101', 'limit'],
    ['a limit that is not a number', 'limit=ten', 'limit'],
    ['a negative seq', 'before=-1', 'before'],
    ['a fractional seq', 'after=1.5', 'after'],
  ])('messages with %s is 400 validation_failed', async (_name, query, field) => {
    const { fan, id } = await twoMembers(t);
    const response = await fan.get(`/api/chat/conversations/${id}/messages?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: 'validation_failed', details: [{ field }] });
  });

  it.each([
    ['no since_version', '', 'since_version'],
    ['a negative since_version', 'since_version=-1', 'since_version'],
    ['a limit of 201', 'since_version=0&limit=201', 'limit'],
  ])('changes with %s is 400 validation_failed', async (_name, query, field) => {
    const { fan, id } = await twoMembers(t);
    const response = await fan.get(`/api/chat/conversations/${id}/changes?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: 'validation_failed', details: [{ field }] });
  });
});

describe.each(backends)('order under load, limits raised ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    const roomy = { limit: 1_000, windowMs: 1_000 };
    t = await TestApp.start(backend, {
      overrides: { chatLimits: { chatSendsPerConversation: roomy, chatSendsPerUser: roomy } },
    });
  });
  afterAll(() => t.close());

  it('200 concurrent sends by both members get seqs exactly 1..200', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const responses = await Promise.all(
      range(200).map((i) => (i % 2 ? fan : influencer).send(id, `message ${i}`)),
    );
    expect(responses.filter((r) => r.statusCode !== 201).map((r) => r.body)).toEqual([]);
    const seqs = responses.map((r) => r.json().chat_message.seq as number);
    expect(seqs.sort((a, b) => a - b)).toEqual(range(200));
    expect(await pageUp(fan, id, 100)).toEqual(range(200));
    const { messages, version } = await changesSince(influencer, id, 0);
    expect(messages.map((m) => m.version)).toEqual(range(200));
    expect(version).toBe(200);
  });
});
