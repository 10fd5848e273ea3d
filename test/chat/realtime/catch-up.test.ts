import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../../helpers/backends.js';
import { twoMembers } from '../fixture.js';
import { CatchUpClient, clientState, serverState } from './catch-up-client.js';
import { RealtimeApp } from './fixture.js';

const MANY = { limit: 100_000, windowMs: 60_000 };
const RUNS = 8;

type Who = 0 | 1;
type Op =
  | { kind: 'send' | 'read' | 'disconnect' | 'reconnect' | 'lose'; who: Who }
  | { kind: 'edit' | 'delete'; who: Who; pick: number }
  | { kind: 'resync' };

const who = fc.constantFrom<Who>(0, 1);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('send' as const), who }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('edit' as const), who, pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('delete' as const), who, pick: fc.nat() }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('read' as const), who }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('disconnect' as const), who }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reconnect' as const), who }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('lose' as const), who }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resync' as const) }) },
);

interface Written {
  readonly id: string;
  readonly author: Who;
  deleted: boolean;
}

describe.each(backends)('chat socket: the catch-up rule ($name)', (backend) => {
  let rt: RealtimeApp;
  beforeAll(async () => {
    rt = await RealtimeApp.start(backend, {
      overrides: { chatLimits: { chatSendsPerConversation: MANY, chatSendsPerUser: MANY } },
    });
  });
  afterAll(() => rt?.close());

  it('a client that follows it ends with exactly the server’s state, through disconnects and lost events', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 40 }), async (ops) => {
        const { fan, influencer, id } = await twoMembers(rt.t);
        const members = [fan, influencer] as const;
        const clients = members.map(
          (member) =>
            new CatchUpClient(rt.httpGet, rt.url, member.userId, () => member.account.accessToken, [
              id,
            ]),
        );
        const written: Written[] = [];
        await Promise.all(clients.map((client) => client.connect()));
        try {
          for (const step of ops) await run(step);
          for (const client of clients) {
            client.losing = false;
            if (!client.connected) await client.connect();
          }
          rt.bus.resync(); // the last lost events are repaired like any others
          for (const [i, client] of clients.entries()) {
            const member = members[i]!;
            const expected = await serverState(rt.httpGet, member.account.accessToken, id);
            await expect
              .poll(async () => (await client.settled(), clientState(client, id)), {
                timeout: 5_000,
              })
              .toEqual(expected);
            expect(client.failure).toBeUndefined();
          }
        } finally {
          await Promise.all(clients.map((client) => client.disconnect()));
        }

        async function run(step: Op): Promise<void> {
          if (step.kind === 'resync') {
            for (const client of clients) client.losing = false;
            return rt.bus.resync();
          }
          const [member, client] = [members[step.who], clients[step.who]!];
          const mine = written.filter((m) => m.author === step.who && !m.deleted);
          if (step.kind === 'send') {
            const sent = await member.sent(id, `message ${written.length + 1}`);
            written.push({ id: sent.id, author: step.who, deleted: false });
          } else if (step.kind === 'edit' || step.kind === 'delete') {
            const target = mine[step.pick % Math.max(1, mine.length)];
            if (target === undefined) return;
            const response =
              step.kind === 'edit'
                ? await member.edit(target.id, `edited ${step.pick}`)
                : await member.delete(target.id);
            expect(response.statusCode, response.body).toBe(200);
            if (step.kind === 'delete') target.deleted = true;
          } else if (step.kind === 'read') {
            await member.read(id);
          } else if (step.kind === 'disconnect') {
            if (client.connected) await client.disconnect();
          } else if (step.kind === 'reconnect') {
            if (!client.connected) await client.connect();
          } else {
            client.losing = true;
          }
        }
      }),
      // Each failing run waits out the poll: report the first counterexample rather than shrink.
      { numRuns: RUNS, endOnFailure: true },
    );
  }, 120_000);
});
