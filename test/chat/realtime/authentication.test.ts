import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../../helpers/backends.js';
import type { Account } from '../../helpers/test-app.js';
import { RealtimeApp } from './fixture.js';

const MINUTE = 60_000;

describe.each(backends)('chat socket: authentication ($name)', (backend) => {
  let rt: RealtimeApp;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    rt = await RealtimeApp.start(backend);
    alice = await rt.t.register();
    bob = await rt.t.register();
  });
  afterAll(() => rt?.close());

  it('accepts the bearer token of the upgrade and says ready with the user and session', async () => {
    const client = await rt.open({ token: alice.accessToken });
    const [ready] = await client.waitFor('ready');
    expect(ready).toEqual({
      type: 'ready',
      user_id: alice.userId,
      session_id: await rt.sessionIdOf(alice),
    });
    client.close();
  });

  it('accepts an auth frame sent first, for browsers that cannot set the header', async () => {
    const client = await rt.open();
    client.send({ type: 'auth', access_token: bob.accessToken });
    const [ready] = await client.waitFor('ready');
    expect(ready?.user_id).toBe(bob.userId);
    client.close();
  });

  it.each([
    ['a forged token', { token: 'eyJhbGciOiJFUzI1NiJ9.e30.c2lnbmF0dXJl' }],
    ['a header that is not a bearer token', { headers: { authorization: 'Basic YTpi' } }],
  ])('closes with 4401 for %s on the upgrade, never saying ready', async (_name, options) => {
    const client = await rt.open(options);
    expect((await client.waitClosed()).code).toBe(4401);
    expect(client.framesOf('ready')).toEqual([]);
  });

  it('closes with 4401 for a bad token in the auth frame', async () => {
    const client = await rt.open();
    client.send({ type: 'auth', access_token: `${alice.accessToken}x` });
    expect((await client.waitClosed()).code).toBe(4401);
  });

  it('closes with 4401 for an empty token in the auth frame, at once (not 4408 after 5 s)', async () => {
    const client = await rt.open();
    client.send({ type: 'auth', access_token: '' });
    expect((await client.waitClosed()).code).toBe(4401);
    const ready = await rt.connect(alice);
    ready.send({ type: 'auth', access_token: '' });
    expect((await ready.waitClosed()).code).toBe(4401);
  });

  it('closes with 4401 for the token of a session that has ended', async () => {
    const carol = await rt.t.register();
    await rt.t.post('/api/logout', {}, { token: carol.accessToken });
    const client = await rt.open({ token: carol.accessToken });
    expect((await client.waitClosed()).code).toBe(4401);
  });

  it('closes with 4408 when no authentication comes within 5 s, and ignores a token in the URL', async () => {
    const client = await rt.open();
    const inUrl = await rt.open({ query: `?access_token=${alice.accessToken}` });
    rt.t.clock.advance(5_000);
    expect((await client.waitClosed()).code).toBe(4408);
    expect((await inUrl.waitClosed()).code).toBe(4408);
    expect(inUrl.framesOf('ready')).toEqual([]);
  });

  it('accepts an auth frame inside the window', async () => {
    const client = await rt.open();
    rt.t.clock.advance(4_000); // a second inside the 5 s window: the clock moves with real time too
    client.send({ type: 'auth', access_token: alice.accessToken });
    await client.waitFor('ready');
    expect(client.isOpen).toBe(true);
    client.close();
  });

  it('closes with 4403 when an authenticated socket sends an auth frame of another user', async () => {
    const client = await rt.connect(alice);
    client.send({ type: 'auth', access_token: bob.accessToken });
    expect((await client.waitClosed()).code).toBe(4403);
  });

  it('closes with 4401 at the token’s expiry when no fresh token came', async () => {
    const dave = await rt.t.register();
    const client = await rt.connect(dave);
    rt.t.clock.advance(15 * MINUTE);
    expect((await client.waitClosed()).code).toBe(4401);
  });

  it('stays open past the old token’s expiry after an auth frame with a fresh one', async () => {
    const erin = await rt.t.register();
    const client = await rt.connect(erin);
    rt.t.clock.advance(14 * MINUTE);
    const refreshed = await rt.t.post('/api/refresh-token', { refresh_token: erin.refreshToken });
    client.send({ type: 'auth', access_token: refreshed.json().access_token });
    await client.roundTrip(); // the auth frame has been received
    rt.t.clock.advance(2 * MINUTE); // past the first token's exp, inside the second's
    await new Promise((resolve) => setTimeout(resolve, 600)); // two deadline checks and more
    await client.roundTrip();
    expect(client.isOpen).toBe(true);
    expect(client.framesOf('ready')).toHaveLength(1); // a renewal is silent
    rt.t.clock.advance(14 * MINUTE);
    expect((await client.waitClosed()).code).toBe(4401);
  });
});
