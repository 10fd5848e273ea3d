import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { LockHolder } from '../helpers/lock-waits.js';
import { STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';
import { confirmedAccount, creator, hasProfileRow } from '../influencer/support.js';
import { ChatClient, errorOf, start, type ChatMessageBody } from '../chat/fixture.js';

/**
 * Writes by an account racing its deletion, which locks the account's row first (lockAccount):
 * each either commits before the deletion reads the account's data, or fails after it.
 * PostgreSQL only: SQLite runs one write transaction at a time, so these cannot interleave.
 */
const postgres = backends.find((backend) => backend.name.startsWith('postgres'));

describe.skipIf(postgres === undefined)(
  `deletion racing writes (${postgres?.name ?? 'postgres'})`,
  () => {
    let t: TestApp;
    let holder: LockHolder;
    beforeAll(async () => {
      t = await TestApp.start(postgres as NonNullable<typeof postgres>);
      holder = await LockHolder.connect(t.backend.env.DATABASE_URL as string);
    });
    afterAll(async () => {
      await holder.end();
      await t.close();
    });

    it('a message sent while its author deletes the account is refused, not kept with its text', async () => {
      const made = await creator(t, { dm_policy: 'everyone' });
      const influencer = new ChatClient(t, made.account);
      const fan = new ChatClient(t, await t.register());
      const id = (await start(fan, influencer.userId)).json().conversation.id as string;
      await fan.sent(id, 'hi');
      // A slow moment of the deletion, after it has turned the account's messages into tombstones.
      await holder.hold('select id from influencer_profiles where id = $1 for update', [made.id]);
      const deleting = influencer.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });
      await holder.untilWaiting('"influencer_profiles"');
      const sending = influencer.send(id, 'sent while deleting');
      // The send's one statement (PostgreSQL shows its first 1 KB): numbering, then the insert.
      await holder.untilWaiting('with "numbered"');
      await holder.release();
      const [deleted, sent] = await Promise.all([deleting, sending]);
      expect(deleted.statusCode, deleted.body).toBe(200);
      expect(errorOf(sent)).toEqual([404, 'not_found']);
      const page = (await fan.get(`/api/chat/conversations/${id}/messages`)).json();
      const texts = (page.messages as ChatMessageBody[]).map((m) => m.text);
      expect(texts).toEqual(['hi']);
    });

    it('a follow in flight while the follower deletes the account leaves followers_count = rows', async () => {
      const star = await creator(t);
      const fan = await confirmedAccount(t);
      // Holds the follow after its INSERT, at its count update.
      await holder.hold('select 1 from influencer_profiles where id = $1 for no key update', [
        star.id,
      ]);
      const following = t.call('PUT', `/api/influencers/${star.id}/follow`, {
        token: fan.accessToken,
      });
      await holder.untilWaiting('for no key update');
      const deleting = t.call('DELETE', '/api/profile', {
        token: fan.accessToken,
        body: { password: fan.password },
      });
      // The deletion waits for the follow before it reads the account's follows.
      await holder.untilWaiting('from "users"');
      await holder.release();
      const [followed, deleted] = await Promise.all([following, deleting]);
      expect([followed.statusCode, deleted.statusCode]).toEqual([200, 200]);
      const rows = await t.db
        .selectFrom('follows')
        .select('follower_id')
        .where('influencer_id', '=', star.id)
        .execute();
      const shown = (await t.call('GET', `/api/influencers/${star.id}`)).json().influencer;
      expect([shown.followers_count, rows.length]).toEqual([0, 0]);
    });

    it('an influencer profile created while its account is deleted answers 401, and none is left', async () => {
      const account = await confirmedAccount(t);
      // The account's deletion, not yet committed: the profile's INSERT waits on its foreign key.
      await holder.hold('delete from users where id = $1', [account.userId]);
      const creating = t.post(
        '/api/influencers',
        { handle: `gone_${account.userId.slice(0, 8)}`, display_name: 'Gone', categories: ['art'] },
        { token: account.accessToken },
      );
      await holder.untilWaiting('"influencer_profiles"');
      await holder.release();
      expect(errorOf(await creating)).toEqual([401, 'unauthorized']);
      expect(await hasProfileRow(t, account.userId)).toBe(false);
    });

    it('blocking an account deleted while the block waits answers 404, never 500', async () => {
      const blocker = await t.register();
      const target = await t.register();
      // Holds the block at its INSERT (its foreign key on the blocker's row).
      await holder.hold('select id from users where id = $1 for update', [blocker.userId]);
      const blocking = t.call('PUT', `/api/blocks/${target.userId}`, {
        token: blocker.accessToken,
      });
      await holder.untilWaiting('"blocks"');
      const deleted = await t.call('DELETE', '/api/profile', {
        token: target.accessToken,
        body: { password: STRONG_PASSWORD },
      });
      expect(deleted.statusCode, deleted.body).toBe(200);
      await holder.release();
      expect(errorOf(await blocking)).toEqual([404, 'not_found']);
    });

    it("a deletion does not wait for the account row of a peer it wrote to (the peer's own deletion holds it)", async () => {
      const a = new ChatClient(t, await t.register());
      const b = new ChatClient(t, (await creator(t, { dm_policy: 'everyone' })).account);
      const id = (await start(a, b.userId)).json().conversation.id as string;
      await a.sent(id, 'hello');
      // As B's deletion does (lockAccount), while it waits for the conversation row A's holds.
      await holder.hold('select id from users where id = $1 for update', [b.userId]);
      const deleting = a.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });
      const waited = await holder.untilWaiting('delete from "users"').then(
        () => true,
        () => false,
      );
      await holder.release();
      expect((await deleting).statusCode).toBe(200);
      expect(waited).toBe(false);
    }, 20_000);

    it('accounts that wrote to each other, deleted at once, all answer 200', async () => {
      const clients = await Promise.all(
        Array.from(
          { length: 4 },
          async () => new ChatClient(t, (await creator(t, { dm_policy: 'everyone' })).account),
        ),
      );
      for (const [i, a] of clients.entries()) {
        for (const b of clients.slice(i + 1)) {
          const id = (await start(a, b.userId)).json().conversation.id as string;
          await a.sent(id, 'x');
          await b.sent(id, 'y');
        }
      }
      const deleted = await Promise.all(
        clients.map((client) =>
          client.call('DELETE', '/api/profile', { password: STRONG_PASSWORD }),
        ),
      );
      expect(deleted.map((response) => response.statusCode)).toEqual([200, 200, 200, 200]);
    }, 60_000);
  },
);
