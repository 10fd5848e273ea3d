import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import {
  changesSince,
  newKey,
  twoMembers,
  type ChatClient,
  type ChatMessageBody,
} from './fixture.js';

/**
 * Property: whatever interleaving of sends (one at a time or in concurrent bursts), edits,
 * deletes, replays and reads the two members perform, the conversation the service shows equals a
 * plain in-memory model of it: seq and version, both sides' unread counts and read positions, the
 * changes feed and the message pages.
 */

type Side = 'fan' | 'influencer';
const SIDES: Side[] = ['fan', 'influencer'];

interface ModelMessage {
  id: string;
  seq: number;
  sender: Side;
  key: string;
  firstText: string;
  text: string | null;
  version: number;
}

class Model {
  lastSeq = 0;
  version = 0;
  messages: ModelMessage[] = [];
  lastRead: Record<Side, number> = { fan: 0, influencer: 0 };

  unread(side: Side): number {
    return this.messages.filter(
      (m) => m.sender !== side && m.text !== null && m.seq > this.lastRead[side],
    ).length;
  }

  add(side: Side, sent: ChatMessageBody, key: string, text: string): void {
    this.lastSeq = sent.seq;
    this.version = sent.version;
    this.lastRead[side] = sent.seq;
    this.messages.push({
      id: sent.id,
      seq: sent.seq,
      sender: side,
      key,
      firstText: text,
      text: text.normalize('NFC'),
      version: sent.version,
    });
  }
}

interface Real {
  readonly t: TestApp;
  readonly id: string;
  readonly clients: Record<Side, ChatClient>;
}

const pick = <T>(items: readonly T[], n: number): T | undefined =>
  items[n % Math.max(1, items.length)];

class Send implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly side: Side,
    readonly text: string,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const key = newKey();
    const response = await real.clients[this.side].send(real.id, this.text, key);
    expect(response.statusCode, response.body).toBe(201);
    const sent = response.json().chat_message;
    expect([sent.seq, sent.version]).toEqual([model.lastSeq + 1, model.version + 1]);
    model.add(this.side, sent, key, this.text);
  }
  toString = () => `send(${this.side}, ${JSON.stringify(this.text)})`;
}

/** Concurrent sends by both members: seqs are consecutive whatever order they commit in. */
class Burst implements fc.AsyncCommand<Model, Real> {
  constructor(readonly sides: Side[]) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const sends = this.sides.map((side, i) => ({ side, key: newKey(), text: `burst ${i}` }));
    const responses = await Promise.all(
      sends.map((s) => real.clients[s.side].send(real.id, s.text, s.key)),
    );
    const sent = responses.map((r, i) => {
      expect(r.statusCode, r.body).toBe(201);
      return {
        ...(sends[i] as (typeof sends)[number]),
        message: r.json().chat_message as ChatMessageBody,
      };
    });
    sent.sort((a, b) => a.message.seq - b.message.seq);
    expect(sent.map((s) => s.message.seq)).toEqual(sent.map((_, i) => model.lastSeq + 1 + i));
    for (const s of sent) {
      expect(s.message.version).toBe(model.version + 1);
      model.add(s.side, s.message, s.key, s.text);
    }
  }
  toString = () => `burst(${this.sides.join(',')})`;
}

class Replay implements fc.AsyncCommand<Model, Real> {
  constructor(readonly n: number) {}
  check = (model: Readonly<Model>) => model.messages.length > 0;
  async run(model: Model, real: Real) {
    const target = pick(model.messages, this.n) as ModelMessage;
    const response = await real.clients[target.sender].send(real.id, target.firstText, target.key);
    expect(response.statusCode).toBe(200);
    expect(response.json().chat_message).toMatchObject({
      id: target.id,
      text: target.text,
      version: target.version,
    });
  }
  toString = () => `replay(${this.n})`;
}

class Edit implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly side: Side,
    readonly n: number,
    readonly text: string,
  ) {}
  check = (model: Readonly<Model>) => model.messages.length > 0;
  async run(model: Model, real: Real) {
    const target = pick(model.messages, this.n) as ModelMessage;
    const response = await real.clients[this.side].edit(target.id, this.text);
    if (target.sender !== this.side) return void expect(response.statusCode).toBe(403);
    if (target.text === null) return void expect(response.statusCode).toBe(409);
    expect(response.statusCode, response.body).toBe(200);
    model.version += 1;
    Object.assign(target, { text: this.text.normalize('NFC'), version: model.version });
    expect(response.json().chat_message).toMatchObject({
      text: target.text,
      version: model.version,
    });
  }
  toString = () => `edit(${this.side}, ${this.n})`;
}

class Delete implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly side: Side,
    readonly n: number,
  ) {}
  check = (model: Readonly<Model>) => model.messages.length > 0;
  async run(model: Model, real: Real) {
    const target = pick(model.messages, this.n) as ModelMessage;
    const response = await real.clients[this.side].delete(target.id);
    if (target.sender !== this.side) return void expect(response.statusCode).toBe(403);
    expect(response.statusCode, response.body).toBe(200);
    if (target.text !== null) {
      model.version += 1;
      Object.assign(target, { text: null, version: model.version });
    }
    expect(response.json().chat_message).toMatchObject({ deleted: true, version: target.version });
  }
  toString = () => `delete(${this.side}, ${this.n})`;
}

class Read implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly side: Side,
    readonly n: number | null,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const seq = this.n === null ? undefined : this.n % (model.lastSeq + 2);
    const url = `/api/chat/conversations/${real.id}/read`;
    const response = await real.clients[this.side].call(
      'POST',
      url,
      seq === undefined ? {} : { seq },
    );
    if (seq !== undefined && seq > model.lastSeq) return void expect(response.statusCode).toBe(400);
    model.lastRead[this.side] = Math.max(model.lastRead[this.side], seq ?? model.lastSeq);
    expect(response.json()).toEqual({
      last_read_seq: model.lastRead[this.side],
      unread_count: model.unread(this.side),
    });
  }
  toString = () => `read(${this.side}, ${this.n})`;
}

/** Each side's conversation view against the model. */
async function expectViews(model: Model, real: Real) {
  for (const side of SIDES) {
    const view = await real.clients[side].conversation(real.id);
    const last = model.messages.find((m) => m.seq === model.lastSeq);
    expect(view).toMatchObject({
      last_seq: model.lastSeq,
      version: model.version,
      unread_count: model.unread(side),
      last_read_seq: model.lastRead[side],
      accepted: model.messages.some((m) => m.sender === 'influencer'),
    });
    expect(view.last_message?.id ?? null).toBe(last?.id ?? null);
  }
  for (const side of SIDES) {
    const unread = await real.clients[side].unread();
    expect(unread.total_unread_count).toBe(model.unread(side));
  }
}

/** The changes feed from `since` and every message page against the model. */
async function expectFeedAndPages(model: Model, real: Real, since: number, limit: number) {
  const client = real.clients.fan;
  const feed = await changesSince(client, real.id, since, limit);
  const changed = model.messages
    .filter((m) => m.version > since)
    .sort((a, b) => a.version - b.version);
  expect(feed.messages.map((m) => [m.id, m.version, m.text])).toEqual(
    changed.map((m) => [m.id, m.version, m.text]),
  );
  expect(feed.version).toBe(model.version);
  const seen: ChatMessageBody[] = [];
  let url = `/api/chat/conversations/${real.id}/messages?limit=${limit}`;
  for (;;) {
    const page = (await client.get(url)).json();
    seen.unshift(...page.messages);
    if (!page.has_more) break;
    url = `/api/chat/conversations/${real.id}/messages?limit=${limit}&before=${page.messages[0].seq}`;
  }
  expect(seen.map((m) => [m.seq, m.id, m.text, m.deleted])).toEqual(
    model.messages.map((m) => [m.seq, m.id, m.text, m.text === null]),
  );
}

const text = fc.oneof(
  fc.string({ minLength: 1, maxLength: 20 }).filter((s) => /\S/.test(s) && !/\p{Cc}/u.test(s)),
  fc.constantFrom('hello', 'é', 'e\u0301', '😀 ok', 'line\nbreak'),
);
const side = fc.constantFrom<Side>('fan', 'influencer');
const commands = fc.commands(
  [
    fc.tuple(side, text).map(([s, t]) => new Send(s, t)),
    fc.array(side, { minLength: 2, maxLength: 6 }).map((sides) => new Burst(sides)),
    fc.nat().map((n) => new Replay(n)),
    fc.tuple(side, fc.nat(), text).map(([s, n, t]) => new Edit(s, n, t)),
    fc.tuple(side, fc.nat()).map(([s, n]) => new Delete(s, n)),
    fc.tuple(side, fc.option(fc.nat(), { nil: null })).map(([s, n]) => new Read(s, n)),
  ],
  { maxCommands: 25 },
);

describe.each(backends)('the conversation against a model ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    const roomy = { limit: 10_000, windowMs: 1_000 };
    t = await TestApp.start(backend, {
      overrides: { chatLimits: { chatSendsPerConversation: roomy, chatSendsPerUser: roomy } },
    });
  });
  afterAll(() => t.close());

  it('random interleavings by both members match the model', async () => {
    await fc.assert(
      fc.asyncProperty(
        commands,
        fc.nat(),
        fc.integer({ min: 1, max: 7 }),
        async (cmds, since, limit) => {
          const { fan, influencer, id } = await twoMembers(t);
          const real: Real = { t, id, clients: { fan, influencer } };
          const model = new Model();
          await fc.asyncModelRun(() => ({ model, real }), cmds);
          await expectViews(model, real);
          await expectFeedAndPages(model, real, since % (model.version + 2), limit);
        },
      ),
      { numRuns: 20, seed: 20_251_124 },
    );
  });
});
