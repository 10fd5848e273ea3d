import { randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { MAX_SESSIONS_PER_ACCOUNT, type SessionView } from '../../src/auth/sessions.js';
import { randomIp, TestApp, type Account } from '../helpers/test-app.js';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

interface Tokens {
  accessToken: string;
  refreshToken: string;
  sessionId: string;
}

describe.each(backends)('sessions and logout ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  /** A new session of `account`, signed in from `ip` with `userAgent`. */
  async function signIn(account: Account, userAgent = 'TestAgent/1.0', ip = randomIp()) {
    const response = await t.post(
      '/api/login',
      { email: account.email, password: account.password },
      { ip, headers: { 'user-agent': userAgent } },
    );
    expect(response.statusCode).toBe(200);
    const body = response.json();
    return {
      accessToken: body.access_token,
      refreshToken: body.refresh_token,
      sessionId: decodeJwt(body.access_token).sid as string,
    } satisfies Tokens;
  }

  const listSessions = (token: string) => t.call('GET', '/api/sessions', { token });
  const revoke = (token: string, id: string) => t.call('DELETE', `/api/sessions/${id}`, { token });
  const refresh = (refreshToken: string) =>
    t.post('/api/refresh-token', { refresh_token: refreshToken }, { ip: randomIp() });

  async function expectSignedOut(tokens: Tokens): Promise<void> {
    const access = await listSessions(tokens.accessToken);
    expect(access.statusCode).toBe(401);
    expect(access.json().error).toBe('unauthorized');
    expect(access.headers['www-authenticate']).toBe('Bearer');
    const renewed = await refresh(tokens.refreshToken);
    expect(renewed.statusCode).toBe(401);
    expect(renewed.json().error).toBe('invalid_refresh_token');
  }

  async function expectSignedIn(tokens: Tokens): Promise<void> {
    expect((await listSessions(tokens.accessToken)).statusCode).toBe(200);
  }

  /** A session row as a sign-in at `lastUsedAt` would have stored it, ending at `expiresAt`. */
  const sessionRow = (userId: string, lastUsedAt: number, expiresAt: number) => ({
    id: randomUUID(),
    user_id: userId,
    refresh_seed: 'seed',
    refresh_generation: 0,
    recent_rotations: null,
    user_agent: null,
    ip: null,
    created_at: lastUsedAt,
    last_used_at: lastUsedAt,
    expires_at: expiresAt,
  });

  describe('at most 100 sessions per account', () => {
    it('signing in beyond them ends the least recently used; the others keep working', async () => {
      const account = await t.register(); // its session is the one used last
      const now = t.clock.now();
      // With the registration's, the account is at the cap: the next sign-in goes past it.
      // The last is the least recently used.
      const seeded = Array.from({ length: MAX_SESSIONS_PER_ACCOUNT - 1 }, (_, i) =>
        sessionRow(account.userId, now - 60_000 - i, now + 24 * 3_600_000),
      );
      await t.db.insertInto('sessions').values(seeded).execute();

      const signedIn = await signIn(account);
      const listed = (await listSessions(signedIn.accessToken)).json().sessions as SessionView[];
      expect(listed).toHaveLength(MAX_SESSIONS_PER_ACCOUNT);
      const ids = new Set(listed.map((session) => session.id));
      expect(ids.has(signedIn.sessionId)).toBe(true);
      expect(ids.has(decodeJwt(account.accessToken).sid as string)).toBe(true);
      expect(ids.has(seeded.at(-2)!.id)).toBe(true);
      expect(ids.has(seeded.at(-1)!.id)).toBe(false);
      expect((await listSessions(account.accessToken)).statusCode).toBe(200);
    });

    it('an expired session the sweep has not deleted yet goes first, not a live one', async () => {
      const account = await t.register();
      const now = t.clock.now();
      // 98 live ones used a while ago, and one used a minute ago that expired since: with the
      // registration's, 100 rows, 99 of them live.
      const live = Array.from({ length: MAX_SESSIONS_PER_ACCOUNT - 2 }, (_, i) =>
        sessionRow(account.userId, now - 3_600_000 - i, now + 24 * 3_600_000),
      );
      await t.db
        .insertInto('sessions')
        .values([...live, sessionRow(account.userId, now - 60_000, now - 1)])
        .execute();

      const signedIn = await signIn(account);
      const listed = (await listSessions(signedIn.accessToken)).json().sessions as SessionView[];
      const ids = new Set(listed.map((row) => row.id));
      expect(live.filter((row) => !ids.has(row.id))).toEqual([]);
      expect(listed).toHaveLength(MAX_SESSIONS_PER_ACCOUNT);
    });
  });

  describe('GET /api/sessions', () => {
    it('lists {id, created_at, last_used_at, user_agent, ip, current} for each live session', async () => {
      const account = await t.register();
      const laptopIp = randomIp();
      const phoneIp = randomIp();
      const laptop = await signIn(account, 'Laptop-Browser/1.0', laptopIp);
      const phone = await signIn(account, 'Phone-App/2.5 (iOS)', phoneIp);

      const response = await listSessions(phone.accessToken);
      expect(response.statusCode).toBe(200);
      const body = response.json() as { sessions: SessionView[] };
      expect(Object.keys(body)).toEqual(['sessions']);
      expect(body.sessions).toHaveLength(3); // registration, laptop, phone
      for (const session of body.sessions) {
        expect(Object.keys(session).sort()).toEqual([
          'created_at',
          'current',
          'id',
          'ip',
          'last_used_at',
          'user_agent',
        ]);
        expect(session.created_at).toMatch(ISO_UTC);
        expect(session.last_used_at).toMatch(ISO_UTC);
      }
      const byId = new Map(body.sessions.map((s) => [s.id, s]));
      expect(byId.get(phone.sessionId)).toMatchObject({
        user_agent: 'Phone-App/2.5 (iOS)',
        ip: phoneIp,
        current: true,
      });
      expect(byId.get(laptop.sessionId)).toMatchObject({
        user_agent: 'Laptop-Browser/1.0',
        ip: laptopIp,
        current: false,
      });
      expect(body.sessions.filter((s) => s.current)).toHaveLength(1);
    });

    it("marks as current only the caller's session", async () => {
      const account = await t.register();
      const other = await signIn(account);
      const response = await listSessions(account.accessToken);
      const sessions = response.json().sessions as SessionView[];
      const current = sessions.filter((s) => s.current).map((s) => s.id);
      expect(current).toEqual([decodeJwt(account.accessToken).sid]);
      expect(sessions.find((s) => s.id === other.sessionId)?.current).toBe(false);
    });

    it("a refresh is a use: it moves the session's last_used_at", async () => {
      const account = await t.register();
      const sessionId = decodeJwt(account.accessToken).sid as string;
      const observer = await signIn(account);
      const lastUsed = async () =>
        Date.parse(
          ((await listSessions(observer.accessToken)).json().sessions as SessionView[]).find(
            (s) => s.id === sessionId,
          )!.last_used_at,
        );
      const before = await lastUsed();
      t.clock.advance(10 * 60_000);
      expect((await refresh(account.refreshToken)).statusCode).toBe(200);
      expect((await lastUsed()) - before).toBeGreaterThanOrEqual(10 * 60_000);
    });

    it("lists only the caller's own sessions", async () => {
      const account = await t.register();
      const stranger = await t.register();
      const strangerSid = decodeJwt(stranger.accessToken).sid;
      const sessions = (await listSessions(account.accessToken)).json().sessions as SessionView[];
      expect(sessions.map((s) => s.id)).not.toContain(strangerSid);
    });

    it('answers 401 without a bearer token', async () => {
      const response = await t.call('GET', '/api/sessions');
      expect(response.statusCode).toBe(401);
      expect(response.json().error).toBe('unauthorized');
    });
  });

  describe('DELETE /api/sessions/{id}', () => {
    it('answers {"message":"Session revoked"} and that session is signed out at once', async () => {
      const account = await t.register();
      const victim = await signIn(account);
      await expectSignedIn(victim);

      const response = await revoke(account.accessToken, victim.sessionId);
      expect(response.statusCode).toBe(200);
      expect(response.body).toBe('{"message":"Session revoked"}');

      await expectSignedOut(victim);
      const remaining = (await listSessions(account.accessToken)).json().sessions as SessionView[];
      expect(remaining.map((s) => s.id)).not.toContain(victim.sessionId);
    });

    it('answers 404 not_found for an expired session, which the list no longer shows', async () => {
      const account = await t.register();
      const expired = await signIn(account);
      await t.db
        .updateTable('sessions')
        .set({ expires_at: t.clock.now() - 1 })
        .where('id', '=', expired.sessionId)
        .execute();
      const listed = (await listSessions(account.accessToken)).json().sessions as SessionView[];
      expect(listed.map((s) => s.id)).not.toContain(expired.sessionId);
      const response = await revoke(account.accessToken, expired.sessionId);
      expect(response.statusCode).toBe(404);
      expect(response.json().error).toBe('not_found');
    });

    it('answers 404 not_found for an unknown id', async () => {
      const account = await t.register();
      const response = await revoke(account.accessToken, randomUUID());
      expect(response.statusCode).toBe(404);
      expect(response.json().error).toBe('not_found');
    });

    it("answers 404 not_found for another user's session, which keeps working", async () => {
      const account = await t.register();
      const stranger = await t.register();
      const strangerSession = await signIn(stranger);
      const response = await revoke(account.accessToken, strangerSession.sessionId);
      expect(response.statusCode).toBe(404);
      expect(response.json().error).toBe('not_found');
      await expectSignedIn(strangerSession);
      expect((await refresh(strangerSession.refreshToken)).statusCode).toBe(200);
    });

    it('answers 401 without a bearer token', async () => {
      const account = await t.register();
      const sid = decodeJwt(account.accessToken).sid as string;
      const response = await t.call('DELETE', `/api/sessions/${sid}`);
      expect(response.statusCode).toBe(401);
      expect(response.json().error).toBe('unauthorized');
      await expectSignedIn({ ...account, sessionId: sid });
    });
  });

  describe('POST /api/logout', () => {
    it('answers {"message":"Logged out"} and ends only this session', async () => {
      const account = await t.register();
      const here = await signIn(account);
      const elsewhere = await signIn(account);

      const response = await t.post('/api/logout', {}, { token: here.accessToken });
      expect(response.statusCode).toBe(200);
      expect(response.body).toBe('{"message":"Logged out"}');

      await expectSignedOut(here);
      await expectSignedIn(elsewhere);
      expect((await refresh(elsewhere.refreshToken)).statusCode).toBe(200);
    });

    it('with {"all": false} ends only this session, as without all', async () => {
      const account = await t.register();
      const here = await signIn(account);
      const elsewhere = await signIn(account);
      const response = await t.post('/api/logout', { all: false }, { token: here.accessToken });
      expect(response.statusCode).toBe(200);
      await expectSignedOut(here);
      await expectSignedIn(elsewhere);
      expect((await refresh(elsewhere.refreshToken)).statusCode).toBe(200);
    });

    it('with {"all": true} ends every session of the user', async () => {
      const account = await t.register();
      const first = await signIn(account);
      const second = await signIn(account);
      const registration = {
        ...account,
        sessionId: decodeJwt(account.accessToken).sid as string,
      };

      const response = await t.post('/api/logout', { all: true }, { token: first.accessToken });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ message: 'Logged out' });

      await expectSignedOut(first);
      await expectSignedOut(second);
      await expectSignedOut(registration);
      const rows = await t.db
        .selectFrom('sessions')
        .select('id')
        .where('user_id', '=', account.userId)
        .execute();
      expect(rows).toHaveLength(0);
    });

    it("with {all: true} leaves other users' sessions alone", async () => {
      const account = await t.register();
      const bystander = await t.register();
      await t.post('/api/logout', { all: true }, { token: account.accessToken });
      await expectSignedIn({
        ...bystander,
        sessionId: decodeJwt(bystander.accessToken).sid as string,
      });
    });

    it('works with no body at all', async () => {
      const account = await t.register();
      const session = await signIn(account);
      const response = await t.call('POST', '/api/logout', { token: session.accessToken });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ message: 'Logged out' });
      await expectSignedOut(session);
    });

    it('rejects the access token (401) and the refresh token (401 invalid_refresh_token) afterwards', async () => {
      const account = await t.register();
      const session = await signIn(account);
      await expectSignedIn(session);
      expect((await t.post('/api/logout', {}, { token: session.accessToken })).statusCode).toBe(
        200,
      );
      await expectSignedOut(session);
      // Logging out again with the same token is refused too: the session is gone.
      const again = await t.post('/api/logout', {}, { token: session.accessToken });
      expect(again.statusCode).toBe(401);
    });

    it('answers 401 without a bearer token', async () => {
      const response = await t.post('/api/logout', {});
      expect(response.statusCode).toBe(401);
      expect(response.json().error).toBe('unauthorized');
      expect(response.headers['www-authenticate']).toBe('Bearer');
    });
  });
});
