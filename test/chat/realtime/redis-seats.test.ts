import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisSocketSeats, type SeatTiming } from '../../../src/chat/realtime/redis-seats.js';
import { MAX_SOCKETS_PER_USER } from '../../../src/chat/realtime/socket-limits.js';
import type { Seat } from '../../../src/chat/realtime/socket-seats.js';
import { capturedLog } from '../../helpers/captured-log.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';
import { canRunPrivateRedis, PrivateRedis } from '../../scale/private-servers.js';
import { waitUntil } from '../../scale/service-process.js';

if (!canRunPrivateRedis) console.warn('no redis-server: skipping test/chat/realtime/redis-seats.');

/** An instance gone for 1.5 s no longer counts; a user's set lives 3 s after its last write. */
const FAST: SeatTiming = { instanceLeaseMs: 1_500, beatEveryMs: 100, seatsTtlMs: 3_000 };

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
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
    await Promise.all(open.splice(0).map((seats) => seats.close()));
  });
  afterAll(async () => {
    await redis?.kill();
  });

  async function instance(url = redis.url, timing = FAST): Promise<RedisSocketSeats> {
    const seats = await RedisSocketSeats.connect(url, log.log, { prefix: 't:' }, timing);
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

  /** Seats written again only when something calls for it (no periodic write within a test). */
  const rarelyWritten = { ...FAST, seatsTtlMs: 3_600_000 };

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
    await waitUntil('the seats granted meanwhile written', () => seatCount(user) === 5, 15_000);
    expect(await (await instance()).take(user)).toBeUndefined();
  });

  it('gives every seat back: a user whose sockets all closed leaves nothing in Redis', async () => {
    const a = await instance();
    const user = randomUUID();
    const seats = await takeAll(a, user, 3);
    await Promise.all(seats.map((seat) => seat.release()));
    await seats[0]!.release(); // a second time is nothing
    expect(redis.cli('EXISTS', `t:chat:seats:${user}`)).toBe('0'); // at once, not after a lease
  });
});
