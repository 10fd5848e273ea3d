import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisSocketSeats, type SeatTiming } from '../../../src/chat/realtime/redis-seats.js';
import { MAX_SOCKETS_PER_USER } from '../../../src/chat/realtime/socket-limits.js';
import type { Seat } from '../../../src/chat/realtime/socket-seats.js';
import { capturedLog } from '../../helpers/captured-log.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';
import type { SilenceCheck } from '../../../src/redis.js';
import { canRunPrivateRedis, PrivateRedis } from '../../scale/private-servers.js';
import { sleep, waitUntil } from '../../scale/service-process.js';

if (!canRunPrivateRedis) console.warn('no redis-server: skipping test/chat/realtime/redis-seats.');

/** An instance gone for 1.5 s no longer counts; a user's set lives 3 s after its last write. */
const FAST: SeatTiming = { instanceLeaseMs: 1_500, beatEveryMs: 100, seatsTtlMs: 3_000 };
/** Seats written again only when something calls for it (no periodic write within a test). */
const rarelyWritten: SeatTiming = { ...FAST, seatsTtlMs: 3_600_000 };

/**
 * API.md: "5 open sockets per user". With Redis the count holds across instances: each socket
 * takes a seat, and an instance's seats count while it keeps its own key alive. Instances here are
 * RedisSocketSeats sharing one Redis of the test's own (so it can be stopped); a killed instance
 * is one whose connection goes through a proxy that is shut down.
 */
describe.skipIf(!canRunPrivateRedis)('socket seats counted in Redis', () => {
  let redis: PrivateRedis;
  const open: RedisSocketSeats[] = [];
  const proxies: TcpProxy[] = [];
  const log = capturedLog('warn');

  beforeAll(async () => {
    redis = await PrivateRedis.create();
  });
  afterEach(async () => {
    redis.thaw();
    redis.cli('CONFIG', 'SET', 'min-replicas-to-write', '0');
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
    await Promise.all(open.splice(0).map((seats) => seats.close()));
  });
  afterAll(async () => {
    await redis?.kill();
  });

  async function instance(
    url = redis.url,
    timing = FAST,
    silenceCheck?: SilenceCheck,
  ): Promise<RedisSocketSeats> {
    const options = { prefix: 't:', ...(silenceCheck && { silenceCheck }) };
    const seats = await RedisSocketSeats.connect(url, log.log, options, timing);
    open.push(seats);
    return seats;
  }

  /** An instance whose Redis connection can be cut for good (`kill`), as a killed process's is. */
  async function killable(): Promise<{ seats: RedisSocketSeats; kill: () => Promise<void> }> {
    const proxy = await TcpProxy.start(redis.port);
    proxies.push(proxy);
    return { seats: await instance(`redis://127.0.0.1:${proxy.port}`), kill: () => proxy.close() };
  }

  async function takeAll(seats: RedisSocketSeats, userId: string, count: number): Promise<Seat[]> {
    const taken: Seat[] = [];
    for (let i = 0; i < count; i++) {
      const seat = await seats.take(userId);
      expect(seat, `seat ${i + 1}`).toBeDefined();
      taken.push(seat as Seat);
    }
    return taken;
  }

  const seatCount = (userId: string) => Number(redis.cli('SCARD', `t:chat:seats:${userId}`));
  const setGone = (userId: string) =>
    waitUntil(
      "the user's set gone",
      () => redis.cli('EXISTS', `t:chat:seats:${userId}`) === '0',
      FAST.seatsTtlMs + 2_000,
    );

  /** How many of `userId`'s seats `seats` can take now (taking them). */
  async function grantable(seats: RedisSocketSeats, userId: string): Promise<number> {
    let granted = 0;
    while (granted < MAX_SOCKETS_PER_USER + 2 && (await seats.take(userId)) !== undefined)
      granted += 1;
    return granted;
  }

  /** Reaches into an instance only to see its breaker, or to widen a real window. */
  const internals = (seats: RedisSocketSeats) =>
    seats as unknown as { redis: Redis; breaker: { isOpen: boolean }; instance: string };
  const breakerClosed = (seats: RedisSocketSeats) =>
    waitUntil('the breaker closed', () => !internals(seats).breaker.isOpen, 15_000, 20);

  it("counts a user's seats on every instance: a sixth is refused on either, one given back makes room", async () => {
    const [a, b] = [await instance(), await instance()];
    const user = randomUUID();
    const onA = await takeAll(a, user, 3);
    await takeAll(b, user, 2);
    expect(await a.take(user)).toBeUndefined();
    expect(await b.take(user)).toBeUndefined();
    expect(await a.take(randomUUID()), "another user's").toBeDefined();
    await onA[0]!.release();
    expect(await b.take(user)).toBeDefined();
    expect(await a.take(user)).toBeUndefined();
    expect(seatCount(user)).toBe(MAX_SOCKETS_PER_USER);
  });

  it('frees the seats of an instance that was killed once its key lapses', async () => {
    const [killed, b] = [await killable(), await instance()];
    const user = randomUUID();
    await takeAll(killed.seats, user, MAX_SOCKETS_PER_USER);
    await killed.kill(); // gives nothing back, as a killed process cannot
    const since = Date.now();
    expect(await b.take(user)).toBeUndefined();
    await waitUntil('a seat', async () => (await b.take(user)) !== undefined, 10_000, 50);
    expect(Date.now() - since).toBeLessThan(FAST.instanceLeaseMs + 2_000);
    await takeAll(b, user, MAX_SOCKETS_PER_USER - 1);
  });

  it('keeps the seats of a live instance however long its sockets stay open', async () => {
    const [a, b] = [await killable(), await instance()];
    const user = randomUUID();
    await takeAll(a.seats, user, MAX_SOCKETS_PER_USER);
    await new Promise((resolve) => setTimeout(resolve, FAST.seatsTtlMs + FAST.instanceLeaseMs));
    expect(await b.take(user)).toBeUndefined();
    expect(seatCount(user)).toBe(MAX_SOCKETS_PER_USER);
    // Written again all along, the set still goes once nobody writes it.
    await a.kill();
    await setGone(user);
  });

  it("leaves nothing in Redis of a killed instance's user once the set's time has run out", async () => {
    const killed = await killable();
    const user = randomUUID();
    await takeAll(killed.seats, user, 2);
    await killed.kill();
    await setGone(user);
  });

  it("frees a closed instance's seats at once (a shutdown)", async () => {
    const [a, b] = [await instance(), await instance()];
    const user = randomUUID();
    await takeAll(a, user, MAX_SOCKETS_PER_USER);
    await a.close();
    await takeAll(b, user, MAX_SOCKETS_PER_USER);
  });

  it('writes its seats again after Redis lost them (a restart without persistence)', async () => {
    const [a, b] = [await instance(redis.url, rarelyWritten), await instance()];
    const user = randomUUID();
    await takeAll(a, user, 2);
    redis.cli('FLUSHALL');
    await waitUntil('the seats written again', () => seatCount(user) === 2);
    await takeAll(b, user, 3);
    expect(await b.take(user)).toBeUndefined();
  });

  it('grants seats while Redis does not answer (the instance count still applies) and writes them there once it does', async () => {
    // Frozen for less than an instance's lease: Redis keeps every key, but not the seats granted.
    const a = await instance(redis.url, { ...rarelyWritten, instanceLeaseMs: 60_000 });
    const user = randomUUID();
    await takeAll(a, user, 1);
    const linesBefore = log.lines.length;
    redis.freeze();
    await takeAll(a, user, 4); // the first one waits out the timeout, the others the open breaker
    const during = log.lines.slice(linesBefore).map((line) => JSON.parse(line) as { msg: string });
    const outage = during.filter((line) => line.msg.startsWith('Redis is unavailable'));
    expect(outage.map((line) => line.msg)).toEqual([
      "Redis is unavailable: chat sockets are counted against each user's cap per instance",
    ]);
    redis.thaw();
    await breakerClosed(a); // the probe that closes it has written them
    expect(await grantable(await instance(), user)).toBe(0);
  });

  it('gives every seat back: a user whose sockets all closed leaves nothing in Redis', async () => {
    const a = await instance();
    const user = randomUUID();
    const seats = await takeAll(a, user, 3);
    await Promise.all(seats.map((seat) => seat.release()));
    await seats[0]!.release(); // a second time is nothing
    expect(redis.cli('EXISTS', `t:chat:seats:${user}`)).toBe('0'); // at once, not after a lease
  });
  // Seats Redis holds that their instance no longer has must stop counting: each test below left
  // one behind (a user locked out for good) before the instance renamed itself on recovery.

  it('frees in Redis a seat given back while the breaker was open', async () => {
    const [a, b] = [await instance(redis.url, rarelyWritten), await instance()];
    const user = randomUUID();
    const seats = await takeAll(a, user, MAX_SOCKETS_PER_USER);
    redis.freeze();
    await a.take(randomUUID()); // times out after 500 ms: the breaker opens
    expect(internals(a).breaker.isOpen).toBe(true);
    await Promise.all(seats.map((seat) => seat.release())); // the user's sockets close meanwhile
    redis.thaw();
    await breakerClosed(a);
    await sleep(2 * FAST.instanceLeaseMs);
    expect(await grantable(b, user)).toBe(MAX_SOCKETS_PER_USER);
  });

  it('frees in Redis a seat whose removal never reached it (a flow a NAT dropped)', async () => {
    const proxy = await TcpProxy.start(redis.port);
    proxies.push(proxy);
    const viaProxy = `redis://127.0.0.1:${proxy.port}`;
    const a = await instance(viaProxy, rarelyWritten, { everyMs: 200, withinMs: 300 });
    const b = await instance();
    const user = randomUUID();
    const seats = await takeAll(a, user, 2);
    proxy.silenceOpenFlows();
    await Promise.all(seats.map((seat) => seat.release())); // each times out after 500 ms
    await waitUntil('the breaker opened', () => internals(a).breaker.isOpen, 5_000, 20);
    await breakerClosed(a); // a new connection (the silence check), the probe answered
    await sleep(2 * FAST.instanceLeaseMs);
    expect(await grantable(b, user)).toBe(MAX_SOCKETS_PER_USER);
  });

  it('frees in Redis a seat whose removal met a connection reset (no call failed but that one)', async () => {
    // Beats rarer than the reconnection (200 ms), as in production (2.5 s): no beat fails.
    const timing = { ...rarelyWritten, beatEveryMs: 2_000, instanceLeaseMs: 6_000 };
    const [a, b] = [await instance(redis.url, timing), await instance()];
    const user = randomUUID();
    const seats = await takeAll(a, user, MAX_SOCKETS_PER_USER);
    redis.cli('CLIENT', 'KILL', 'TYPE', 'normal'); // a network blip, a proxy's or a failover's reset
    await sleep(30);
    await Promise.all(seats.map((seat) => seat.release())); // refused at once
    await sleep(3_000);
    expect(await grantable(b, user)).toBe(MAX_SOCKETS_PER_USER);
  });

  it("writes to Redis a seat granted during the probe's last round trip", async () => {
    // A lease that outlives the freeze: the probe's writes are one REGISTER.
    const a = await instance(redis.url, { ...rarelyWritten, instanceLeaseMs: 60_000 });
    const b = await instance();
    const user = randomUUID();
    redis.freeze();
    await a.take(randomUUID()); // times out: the breaker opens, one seat held for the probe
    // The probe's REGISTER round trip (one network round trip in production), widened to 300 ms.
    const connection = internals(a).redis;
    const register = connection.registerSeats.bind(connection);
    let registering: () => void = () => undefined;
    const inProbe = new Promise<void>((resolve) => (registering = resolve));
    connection.registerSeats = ((...args: (string | number)[]) => {
      registering();
      return sleep(300).then(() => register(...args));
    }) as typeof connection.registerSeats;
    redis.thaw();
    await inProbe;
    await takeAll(a, user, MAX_SOCKETS_PER_USER); // granted meanwhile: the breaker is still open
    await breakerClosed(a);
    await sleep(2 * FAST.instanceLeaseMs);
    expect(await b.take(user)).toBeUndefined();
  });

  /** Beats too rare to meet a short outage: only the reconnection tells the instance of it. */
  const rarelyBeating: SeatTiming = {
    ...rarelyWritten,
    beatEveryMs: 5_000,
    instanceLeaseMs: 20_000,
  };
  const renamed = async (seats: RedisSocketSeats, from: string) =>
    waitUntil('a new name', () => internals(seats).instance !== from, 10_000, 20);

  it('does not bring back seats given back before Redis restarted from a snapshot', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'seats-redis-'));
    const snapshotting = await PrivateRedis.create({ dir });
    try {
      const a = await instance(snapshotting.url, rarelyBeating);
      const user = randomUUID();
      const seats = await takeAll(a, user, 3);
      snapshotting.cli('SAVE'); // as Redis snapshots by default (`save 3600 1 300 100 60 10000`)
      await Promise.all(seats.map((seat) => seat.release()));
      const name = internals(a).instance;
      await snapshotting.kill(); // a crash: it starts again from its last snapshot
      await snapshotting.start();
      await renamed(a, name); // on its reconnection: no call of it failed
      expect(await grantable(await instance(snapshotting.url), user)).toBe(MAX_SOCKETS_PER_USER);
    } finally {
      await snapshotting.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("frees a closed instance's seats at once with its breaker open, under every name it gave up", async () => {
    const a = await instance(redis.url, rarelyBeating);
    const user = randomUUID();
    await takeAll(a, user, MAX_SOCKETS_PER_USER);
    redis.cli('CONFIG', 'SET', 'min-replicas-to-write', '1'); // every write: NOREPLICAS
    await a.take(randomUUID()); // refused: the breaker opens
    const name = internals(a).instance;
    await renamed(a, name); // the probe gave its name up, but could not delete its key
    redis.cli('CONFIG', 'SET', 'min-replicas-to-write', '0');
    await a.close();
    expect(await grantable(await instance(), user)).toBe(MAX_SOCKETS_PER_USER);
  });

  it("keeps no seat of a name it gave up in a user's set, though the user opens no new socket", async () => {
    const a = await instance(redis.url, rarelyBeating);
    const user = randomUUID();
    await takeAll(a, user, 2);
    for (let round = 0; round < 3; round++) {
      const name = internals(a).instance;
      redis.cli('CLIENT', 'KILL', 'TYPE', 'normal'); // each reconnection: a new name
      await renamed(a, name);
    }
    await waitUntil('only the two seats held', () => seatCount(user) === 2);
  });

  it('frees in Redis a seat whose removal Redis refused (writes refused, the connection kept)', async () => {
    const a = await instance(redis.url, rarelyBeating);
    const user = randomUUID();
    const seats = await takeAll(a, user, MAX_SOCKETS_PER_USER);
    redis.cli('CONFIG', 'SET', 'min-replicas-to-write', '1'); // every write: NOREPLICAS
    await Promise.all(seats.map((seat) => seat.release()));
    const name = internals(a).instance;
    await renamed(a, name); // the probe gave the name up, but could not delete its key yet
    redis.cli('CONFIG', 'SET', 'min-replicas-to-write', '0');
    await breakerClosed(a); // a later probe deleted it, and the name before

    expect(await grantable(await instance(), user)).toBe(MAX_SOCKETS_PER_USER);
  });
});
