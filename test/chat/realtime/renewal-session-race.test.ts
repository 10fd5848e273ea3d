import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishSessionsEnded } from '../../../src/events/account-events.js';
import { createPostgresDatabase } from '../../helpers/backends.js';
import { RealtimeApp } from './fixture.js';

const adminUrl = process.env.TEST_DATABASE_URL;

/**
 * API.md: "Logout, a password change or reset, revoking the session and deleting the account
 * close the sockets of every session they end with 4401 within 5 s".
 *
 * A socket of session A renews with an `auth` frame carrying a token of session B (same user).
 * Session B is logged out while that token is being checked: after the check read B as live, and
 * before the socket takes on B. The logout's `session.revoked` for B reaches the socket while it
 * still says A; the socket must not then stay open on an ended session until its token expires.
 *
 * The window is held open deterministically: B's row is locked, so the check's touch of
 * `last_used_at` (done after the liveness read) waits; the logout (delete + commit + publish, as
 * src/auth/sessions.ts does) happens meanwhile.
 */
describe.skipIf(!adminUrl)('renewal to another session vs that session ending', () => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  let rt: RealtimeApp;

  beforeAll(async () => {
    database = await createPostgresDatabase(adminUrl as string);
    const env = { DATABASE_URL: database.url, APP_SECRET: randomBytes(32).toString('base64url') };
    rt = await RealtimeApp.start({ env, drop: async () => undefined });
  });
  afterAll(async () => {
    await rt?.close();
    await database?.drop();
  });

  it('a socket renewed to a session that ended while it was being checked is closed with 4401', async () => {
    const user = await rt.t.register(); // session A
    const other = await rt.t.login(user.email, user.password); // session B
    const sessionB = await rt.sessionIdOf(other);
    const client = await rt.connect(user);
    rt.t.clock.advance(61_000); // B's next use touches its row (TOUCH_INTERVAL_MS)

    const holder = new pg.Client({ connectionString: database.url });
    const watcher = new pg.Client({ connectionString: database.url });
    await holder.connect();
    await watcher.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM sessions WHERE id = $1 FOR UPDATE', [sessionB]);
      client.send({ type: 'auth', access_token: other.accessToken });
      // The check has read B as live and now waits to touch it.
      await expect
        .poll(async () => {
          const { rows } = await watcher.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE wait_event_type = 'Lock' AND query ILIKE 'update "sessions"%'
                AND datname = current_database()`,
          );
          return rows[0].n;
        })
        .toBe(1);
      // Logout of B: delete, commit, then publish (src/auth/sessions.ts `logout`).
      await holder.query('DELETE FROM sessions WHERE id = $1', [sessionB]);
      await holder.query('COMMIT');
      publishSessionsEnded(rt.bus, user.userId, [sessionB]);
    } finally {
      await holder.end();
      await watcher.end();
    }

    const left = await rt.t.call('GET', '/api/sessions', { token: other.accessToken });
    expect(left.statusCode).toBe(401); // B has ended
    // Every session the socket has been authenticated with has now ended... except A, so end A too.
    await rt.t.post('/api/logout', {}, { token: user.accessToken });
    // Both of the socket's sessions have ended; API.md wants it closed with 4401 within 5 s.
    const closed = await client.waitClosed(5_500).catch((error: Error) => error.message);
    expect(closed).toEqual({ code: 4401, reason: expect.any(String) });
  });
});
