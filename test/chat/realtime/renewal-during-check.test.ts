import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../../helpers/backends.js';
import { RealtimeApp } from './fixture.js';

const MINUTE = 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * API.md, token expiry: "the client sends a new `auth` frame with a fresh token before `exp`, or
 * the socket closes with 4401". An `auth` frame that arrives while another token of the socket is
 * being checked is checked next: a fresh token sent before `exp` counts.
 */
describe('an auth frame that arrives during another token check', () => {
  const backend = backends[0]!;
  let rt: RealtimeApp;

  beforeAll(async () => {
    rt = await RealtimeApp.start(backend);
  });
  afterAll(() => rt?.close());

  async function oldAndFresh() {
    const user = await rt.t.register(); // access token issued now: exp in 15 min
    rt.t.clock.advance(14 * MINUTE);
    const refreshed = await rt.t.post('/api/refresh-token', { refresh_token: user.refreshToken });
    expect(refreshed.statusCode).toBe(200);
    return { old: user.accessToken, fresh: refreshed.json().access_token as string };
  }

  it('browser flow: first-frame auth, then a renewal with a fresh token, both before exp', async () => {
    const { old, fresh } = await oldAndFresh();
    const client = await rt.open();
    client.send({ type: 'auth', access_token: old });
    client.send({ type: 'auth', access_token: fresh }); // before exp, same user and session
    await client.waitFor('ready');
    await client.roundTrip();
    rt.t.clock.advance(2 * MINUTE); // past the old token's exp, 13 min before the fresh one's
    await sleep(800);
    expect(client.closeState).toBeUndefined();
    client.close();
  });

  it('ready socket: two renewals back to back, the later one fresher', async () => {
    const { old, fresh } = await oldAndFresh();
    const client = await rt.connect({ accessToken: old });
    client.send({ type: 'auth', access_token: old });
    client.send({ type: 'auth', access_token: fresh });
    await client.roundTrip();
    await sleep(200);
    rt.t.clock.advance(2 * MINUTE);
    await sleep(800);
    expect(client.closeState).toBeUndefined();
    client.close();
  });
});
