import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AWAITING_AUTH_PER_NETWORK } from '../../../src/chat/realtime/socket-limits.js';
import { backends } from '../../helpers/backends.js';
import type { Account } from '../../helpers/test-app.js';
import { RealtimeApp } from './fixture.js';
import type { SocketClient } from './socket-client.js';

/** A socket from `address` (TRUST_PROXY is on) that has not authenticated. */
const from = (address: string, token?: string) => ({
  headers: { 'x-forwarded-for': address },
  ...(token === undefined ? {} : { token }),
});

/** Closes them and waits for each close: none is left for a later test's clock to time out. */
const closeAll = (clients: SocketClient[]) =>
  Promise.all(
    clients.map((client) => {
      client.close();
      return client.waitClosed();
    }),
  );

describe.each(backends)('chat socket: sockets waiting for authentication ($name)', (backend) => {
  let rt: RealtimeApp;
  let alice: Account;

  beforeAll(async () => {
    rt = await RealtimeApp.start(backend, { env: { TRUST_PROXY: 'true' } });
    alice = await rt.t.register();
  });
  afterAll(() => rt?.close());

  /** Authenticates `client` with an auth frame; resolves once `ready` came. */
  const authenticate = async (client: SocketClient) => {
    client.send({ type: 'auth', access_token: alice.accessToken });
    await client.waitFor('ready');
  };

  it('closes a socket over the cap of one address with 4429; others, and header tokens, pass', async () => {
    const address = '203.0.113.7';
    const waiting = await Promise.all(
      Array.from({ length: AWAITING_AUTH_PER_NETWORK }, () => rt.open(from(address))),
    );
    const over = await rt.open(from(address));
    expect(await over.waitClosed()).toEqual({
      code: 4429,
      reason: 'too many sockets waiting for authentication',
    });
    await expect
      .poll(() => rt.metric('chat_sockets_closed_total', '{reason="too_many_awaiting_auth"}'))
      .toBe(1);
    expect(waiting.every((client) => client.isOpen)).toBe(true);

    const elsewhere = await rt.open(from('203.0.113.8'));
    await authenticate(elsewhere);
    const withHeader = await rt.open(from(address, alice.accessToken));
    await withHeader.waitFor('ready');

    // One of the waiting authenticates, another leaves: each makes room for one more.
    const [first, second] = waiting as [SocketClient, SocketClient];
    await authenticate(first);
    const third = await rt.open(from(address));
    second.close();
    await second.waitClosed();
    await expect.poll(() => rt.metric('chat_sockets_closed_total', '{reason="client"}')).toBe(1);
    const fourth = await rt.open(from(address));
    const full = await rt.open(from(address));
    expect((await full.waitClosed()).code).toBe(4429);
    for (const client of [third, fourth]) await authenticate(client);

    await closeAll([...waiting, elsewhere, withHeader, third, fourth]);
  });

  it('gives back one place per waiting socket that leaves, never more: the cap holds after', async () => {
    const address = '203.0.113.50';
    const [leaving, staying] = [await rt.open(from(address)), await rt.open(from(address))];
    const clientCloses = () => rt.metric('chat_sockets_closed_total', '{reason="client"}');
    const before = await clientCloses();
    leaving.close();
    await leaving.waitClosed();
    await expect.poll(clientCloses).toBe(before + 1); // the server has let it go
    const more = await Promise.all(
      Array.from({ length: AWAITING_AUTH_PER_NETWORK - 1 }, () => rt.open(from(address))),
    );
    const over = await rt.open(from(address));
    expect((await over.waitClosed()).code).toBe(4429);
    expect([staying, ...more].every((client) => client.isOpen)).toBe(true);
    await closeAll([staying, ...more]);
  });

  it('counts an IPv6 client by its /64, and an IPv4-mapped address as the IPv4 one', async () => {
    const half = AWAITING_AUTH_PER_NETWORK / 2;
    const sixes = await Promise.all(
      Array.from({ length: AWAITING_AUTH_PER_NETWORK }, (_, i) =>
        rt.open(from(`2001:db8:1:2::${(i % half) + 1}`)),
      ),
    );
    const sameNetwork = await rt.open(from('2001:db8:1:2:ffff::9'));
    expect((await sameNetwork.waitClosed()).code).toBe(4429);
    const otherNetwork = await rt.open(from('2001:db8:1:3::1'));
    await authenticate(otherNetwork);

    const fours = await Promise.all(
      Array.from({ length: AWAITING_AUTH_PER_NETWORK }, () => rt.open(from('192.0.2.44'))),
    );
    const mapped = await rt.open(from('::ffff:192.0.2.44'));
    expect((await mapped.waitClosed()).code).toBe(4429);
    await closeAll([...sixes, ...fours, otherNetwork]);
  });

  it('cuts a refused socket that leaves the close frame unanswered within seconds, not 30', async () => {
    const timedOut = () => rt.metric('chat_sockets_closed_total', '{reason="auth_timeout"}');
    const before = await timedOut();
    const silent = await rt.open(from('198.51.100.77'));
    silent.ws.pause(); // reads nothing from here on: the close frame goes unanswered
    rt.t.clock.advance(5_000);
    // ws alone would wait 30 s for the client's answer before letting the socket go.
    await expect.poll(timedOut, { timeout: 10_000 }).toBe(before + 1);
    silent.ws.resume();
    await silent.waitClosed();
  });

  it('gives every address its share back when the waiting sockets time out', async () => {
    const address = '198.51.100.20';
    const waiting = await Promise.all(
      Array.from({ length: AWAITING_AUTH_PER_NETWORK }, () => rt.open(from(address))),
    );
    const timedOut = () => rt.metric('chat_sockets_closed_total', '{reason="auth_timeout"}');
    const before = await timedOut();
    rt.t.clock.advance(5_000);
    await Promise.all(waiting.map((client) => client.waitClosed()));
    expect(waiting.every((client) => client.closeState?.code === 4408)).toBe(true);
    await expect.poll(timedOut).toBe(before + AWAITING_AUTH_PER_NETWORK); // the server saw them go
    const later = await rt.open(from(address));
    await authenticate(later);
    later.close();
  });
});
