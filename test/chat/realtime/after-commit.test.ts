import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../../src/events/bus.js';
import { backends } from '../../helpers/backends.js';
import { twoMembers } from '../fixture.js';
import { RealtimeApp } from './fixture.js';

/**
 * README/bus.ts: a group publishes "after its transaction commits". Checked where it can be seen
 * the moment the event is published: the memory bus hands it to listeners synchronously, and a
 * second SQLite connection (WAL) sees only what has committed. An event published from inside
 * the transaction would name a version another connection (a client's `changes` request on
 * another instance) cannot see yet, or one that then rolls back.
 */
describe.each(backends.filter((b) => b.name === 'sqlite'))(
  'chat events are published after commit ($name)',
  (backend) => {
    let rt: RealtimeApp;
    let reader: SQLite.Database;

    beforeAll(async () => {
      rt = await RealtimeApp.start(backend);
      const url = rt.t.backend.env.DATABASE_URL as string;
      reader = new SQLite(url.slice('sqlite:'.length), { readonly: true });
      reader.pragma('busy_timeout = 0');
    });
    afterAll(async () => {
      reader?.close();
      await rt?.close();
    });

    it('a send, an edit and a delete: each event’s version is committed when it is published', async () => {
      const { fan, influencer, id } = await twoMembers(rt.t);
      const seen: Array<[type: string, published: unknown, committed: unknown]> = [];
      const committedVersion = reader.prepare('select version from chat_messages where id = ?');
      const stop = await rt.bus.subscribe(influencer.account.userId, ({ event }: Delivery) => {
        if (!event.type.startsWith('message.')) return;
        const message = event.chat_message as { id: string };
        const row = committedVersion.get(message.id) as { version: number } | undefined;
        seen.push([event.type, event.version, row?.version]);
      });
      try {
        const sent = await fan.sent(id, 'hello');
        expect((await fan.edit(sent.id, 'hello again')).statusCode).toBe(200);
        expect((await fan.delete(sent.id)).statusCode).toBe(200);
      } finally {
        stop();
      }
      expect(seen).toEqual([
        ['message.created', 1, 1],
        ['message.updated', 2, 2],
        ['message.deleted', 3, 3],
      ]);
    });
  },
);
