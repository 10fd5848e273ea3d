import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backends, type ProvisionedBackend } from '../../helpers/backends.js';
import { STRONG_PASSWORD } from '../../helpers/test-app.js';
import { RealtimeApp } from './fixture.js';
import type { SocketClient } from './socket-client.js';

/** API.md: the sockets of an ended session close within 5 s. */
const WITHIN_MS = 5_000;
const NEW_PASSWORD = 'quartz-Meadow-93-lantern';

/** Two sessions of one new account, each with a socket. */
async function twoSessions(rt: RealtimeApp) {
  const first = await rt.t.register();
  const second = await rt.t.login(first.email, first.password);
  return {
    first,
    second,
    firstSocket: await rt.connect(first),
    secondSocket: await rt.connect(second),
  };
}

/** The socket is still open, and got no frame but `ready` (and the pong that proves it). */
async function untouched(client: SocketClient): Promise<void> {
  await client.roundTrip();
  expect(client.frames.map((frame) => frame.type)).toEqual(['ready', 'pong']);
}

describe.each(backends)('chat socket: ended sessions close their sockets ($name)', (backend) => {
  let rt: RealtimeApp;
  beforeAll(async () => {
    rt = await RealtimeApp.start(backend);
  });
  afterAll(() => rt?.close());

  it("logout closes that session's sockets with 4401, not another session's", async () => {
    const { first, firstSocket, secondSocket } = await twoSessions(rt);
    const again = await rt.connect(first);
    expect((await rt.t.post('/api/logout', {}, { token: first.accessToken })).statusCode).toBe(200);
    expect((await firstSocket.waitClosed(WITHIN_MS)).code).toBe(4401);
    expect((await again.waitClosed(WITHIN_MS)).code).toBe(4401);
    await untouched(secondSocket);
    secondSocket.close();
  });

  it('logout with all: true closes the sockets of every session', async () => {
    const { first, firstSocket, secondSocket } = await twoSessions(rt);
    await rt.t.post('/api/logout', { all: true }, { token: first.accessToken });
    expect((await firstSocket.waitClosed(WITHIN_MS)).code).toBe(4401);
    expect((await secondSocket.waitClosed(WITHIN_MS)).code).toBe(4401);
  });

  it("a password change closes the other sessions' sockets and keeps the changing one's", async () => {
    const { first, firstSocket, secondSocket } = await twoSessions(rt);
    const changed = await rt.t.post(
      '/api/change-password',
      { password: STRONG_PASSWORD, new_password: NEW_PASSWORD },
      { token: first.accessToken },
    );
    expect(changed.statusCode).toBe(200);
    expect((await secondSocket.waitClosed(WITHIN_MS)).code).toBe(4401);
    await untouched(firstSocket);
    firstSocket.close();
  });

  it('a password reset closes the sockets of every session', async () => {
    const { first, firstSocket, secondSocket } = await twoSessions(rt);
    await rt.t.post('/api/forgot-password', { email: first.email });
    const code = await rt.t.codeFor(first.email, 2); // the registration e-mail came first
    const reset = await rt.t.post('/api/reset-password', {
      email: first.email,
      code,
      new_password: NEW_PASSWORD,
    });
    expect(reset.statusCode).toBe(200);
    expect((await firstSocket.waitClosed(WITHIN_MS)).code).toBe(4401);
    expect((await secondSocket.waitClosed(WITHIN_MS)).code).toBe(4401);
  });

  it('a session.revoked that arrives late leaves alone the sessions that began after it', async () => {
    const { first, firstSocket, secondSocket } = await twoSessions(rt);
    const published = vi.spyOn(rt.bus, 'publish');
    await rt.t.post('/api/forgot-password', { email: first.email });
    const code = await rt.t.codeFor(first.email, 2);
    await rt.t.post('/api/reset-password', {
      email: first.email,
      code,
      new_password: NEW_PASSWORD,
    });
    const revoked = published.mock.calls.find(([, event]) => event.type === 'session.revoked');
    published.mockRestore();
    expect(revoked).toBeDefined();
    await firstSocket.waitClosed(WITHIN_MS);
    await secondSocket.waitClosed(WITHIN_MS);
    // The user signs in again at once; the event reaches this instance again only now (Redis
    // delivers late, or twice after a reconnect).
    const again = await rt.connect(await rt.t.login(first.email, NEW_PASSWORD));
    rt.bus.publish(...revoked!);
    await untouched(again);
    again.close();
  });

  it("revoking a session closes that session's sockets only", async () => {
    const { first, second, firstSocket, secondSocket } = await twoSessions(rt);
    const id = await rt.sessionIdOf(second);
    const revoked = await rt.t.call('DELETE', `/api/sessions/${id}`, { token: first.accessToken });
    expect(revoked.statusCode).toBe(200);
    expect((await secondSocket.waitClosed(WITHIN_MS)).code).toBe(4401);
    await untouched(firstSocket);
    firstSocket.close();
  });

  it('a replayed refresh token, which revokes its session, closes its sockets', async () => {
    const { second, firstSocket, secondSocket } = await twoSessions(rt);
    await rt.t.post('/api/refresh-token', { refresh_token: second.refreshToken });
    rt.t.clock.advance(11_000); // past the 10 s grace for two tabs refreshing at once
    const replayed = await rt.t.post('/api/refresh-token', { refresh_token: second.refreshToken });
    expect(replayed.statusCode).toBe(401);
    expect((await secondSocket.waitClosed(WITHIN_MS)).code).toBe(4401);
    await untouched(firstSocket);
    firstSocket.close();
  });

  it('deleting the account closes the sockets of every session', async () => {
    const { first, firstSocket, secondSocket } = await twoSessions(rt);
    const deleted = await rt.t.call('DELETE', '/api/profile', {
      token: first.accessToken,
      body: { password: STRONG_PASSWORD },
    });
    expect(deleted.statusCode).toBe(200);
    expect((await firstSocket.waitClosed(WITHIN_MS)).code).toBe(4401);
    expect((await secondSocket.waitClosed(WITHIN_MS)).code).toBe(4401);
  });

  it('counts the closes by reason in /metrics', async () => {
    // 2 + 2 + 1 + 2 + 2 + 1 + 1 + 2 above (the server counts once the closing handshake is done).
    await expect
      .poll(() => rt.metric('chat_sockets_closed_total', '{reason="session_ended"}'))
      .toBe(13);
  });

  // Last, as it moves the app's clock 30 days on.
  it("closes a socket at its session's end when that comes before the token's expiry", async () => {
    const account = await rt.t.register();
    rt.t.clock.advance(30 * 24 * 3_600_000 - 60_000); // a minute before the session's end
    const refreshed = await rt.t.post('/api/refresh-token', {
      refresh_token: account.refreshToken,
    });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    const token = refreshed.json().access_token as string;
    const socket = await rt.connect({ accessToken: token });
    rt.t.clock.advance(2 * 60_000); // the session has ended; the token has 13 minutes left
    expect((await rt.t.call('GET', '/api/profile', { token })).statusCode).toBe(401);
    expect((await socket.waitClosed(WITHIN_MS)).code).toBe(4401);
  });
});

describe.each(backends.filter((b) => b.name.includes('redis')))(
  'chat socket: sessions ended through another instance ($name)',
  (backend) => {
    let shared: ProvisionedBackend;
    let a: RealtimeApp;
    let b: RealtimeApp;
    beforeAll(async () => {
      shared = await backend.provision();
      a = await RealtimeApp.start(shared);
      b = await RealtimeApp.start(shared);
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await shared?.drop();
    });

    it('a logout through A closes the socket B holds, within 5 s', async () => {
      const account = await a.t.register();
      const other = await a.t.login(account.email, account.password);
      const onB = await b.connect(account);
      const otherOnB = await b.connect(other);
      await a.t.post('/api/logout', {}, { token: account.accessToken });
      expect((await onB.waitClosed(WITHIN_MS)).code).toBe(4401);
      await untouched(otherOnB);
      otherOnB.close();
    });

    it('an account deleted through A closes its sockets on B', async () => {
      const account = await a.t.register();
      const onB = await b.connect(account);
      await a.t.call('DELETE', '/api/profile', {
        token: account.accessToken,
        body: { password: STRONG_PASSWORD },
      });
      expect((await onB.waitClosed(WITHIN_MS)).code).toBe(4401);
    });
  },
);
