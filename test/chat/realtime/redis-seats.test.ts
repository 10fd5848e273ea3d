import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisSocketSeats, type SeatTiming } from '../../../src/chat/realtime/redis-seats.js';
import { MAX_SOCKETS_PER_USER } from '../../../src/chat/realtime/socket-limits.js';
import type { Seat } from '../../../src/chat/realtime/socket-seats.js';
import { capturedLog } from '../../helpers/captured-log.js';
import { canRunPrivateRedis, PrivateRedis } from '../../scale/private-servers.js';
import { waitUntil } from '../../scale/service-process.js';

if (!canRunPrivateRedis) console.warn('no redis-server: skipping test/chat/realtime/redis-seats.');

const LEASE_MS = 1_000;
/** Renewals by hand only (the timer would not fire within a test). */
const NO_RENEWALS: SeatTiming = { leaseMs: LEASE_MS, renewEveryMs: 3_600_000 };
const RENEWING: SeatTiming = { leaseMs: LEASE_MS, renewEveryMs: 50 };

/**
 * API.md: "5 open sockets per user". With Redis the count holds across instances: each socket's
 * seat, leased and renewed while it stays open. Instances here are RedisSocketSeats sharing one
 * Redis of the test's own (so it can be stopped) and one clock the test moves.
 */
describe.skipIf(!canRunPrivateRedis)('socket seats counted in Redis', () => {
  let redis: PrivateRedis;
  let now = 1_700_000_000_000;
  const clock = () => now;
  const open: RedisSocketSeats[] = [];
  const log = capturedLog('warn');

  beforeAll(async () => {
    redis = await PrivateRedis.create();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((seats) => seats.close()));
  });
  afterAll(async () => {
    await redis?.kill();
  });

  async function instance(timing = NO_RENEWALS): Promise<RedisSocketSeats> {
    const seats = await RedisSocketSeats.connect(
      redis.url,
      clock,
      log.log,
      { prefix: 't:' },
      timing,
    );
    open.push(seats);
    return seats;
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

  const seatCount = (userId: string) => Number(redis.cli('ZCARD', `t:chat:seats:${userId}`));
  const keyGone = (userId: string) =>
    waitUntil('the key gone', () => redis.cli('EXISTS', `t:chat:seats:${userId}`) === '0', 5_000);

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

  it('frees the seats of an instance that stopped renewing them once their lease runs out', async () => {
    const [killed, b] = [await instance(), await instance()];
    const user = randomUUID();
    await takeAll(killed, user, MAX_SOCKETS_PER_USER);
    await killed.close(); // gives nothing back, as a killed process cannot
    now += LEASE_MS - 1;
    expect(await b.take(user)).toBeUndefined();
    now += 1;
    await takeAll(b, user, MAX_SOCKETS_PER_USER);
  });

  it('renews the seats it holds, so they outlast their lease while their sockets stay open', async () => {
    const [a, b] = [await instance(RENEWING), await instance()];
    const user = randomUUID();
    await takeAll(a, user, MAX_SOCKETS_PER_USER);
    for (let step = 0; step < 3; step++) {
      now += LEASE_MS - 100;
      const leasedUntil = now + LEASE_MS;
      await waitUntil('a renewal', () => {
        const scores = redis.cli('ZRANGE', `t:chat:seats:${user}`, '0', '-1', 'WITHSCORES');
        const until = (scores ?? '').split('\n').filter((_, i) => i % 2 === 1);
        return (
          until.length === MAX_SOCKETS_PER_USER && until.every((s) => Number(s) >= leasedUntil)
        );
      });
    }
    expect(await b.take(user)).toBeUndefined();
    // Longer than a lease in Redis's own time too: the key lives while its seats are renewed.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 200));
    expect(seatCount(user)).toBe(MAX_SOCKETS_PER_USER);
    // And no longer than a lease once the renewals stop.
    await a.close();
    await keyGone(user);
  });

  it("leaves nothing in Redis of a killed instance's user once the lease has run out", async () => {
    const killed = await instance();
    const user = randomUUID();
    await takeAll(killed, user, 2);
    await killed.close();
    await keyGone(user);
  });

  it('writes its seats again after Redis lost them (a restart without persistence)', async () => {
    const [a, b] = [await instance(RENEWING), await instance()];
    const user = randomUUID();
    await takeAll(a, user, 2);
    redis.cli('FLUSHALL');
    await waitUntil('the seats written again', () => seatCount(user) === 2);
    await takeAll(b, user, 3);
    expect(await b.take(user)).toBeUndefined();
  });

  it('grants seats while Redis is away (the instance count still applies) and writes them there once it answers', async () => {
    const a = await instance();
    const user = randomUUID();
    await takeAll(a, user, 1);
    const linesBefore = log.lines.length;
    await redis.kill();
    await takeAll(a, user, 4); // the first one meets the outage, the others the open breaker
    const during = log.lines.slice(linesBefore).map((line) => JSON.parse(line) as { msg: string });
    const outage = during.filter((line) => line.msg.startsWith('Redis is unavailable'));
    expect(outage.map((line) => line.msg)).toEqual([
      "Redis is unavailable: chat sockets are counted against each user's cap per instance",
    ]);
    await redis.start();
    await waitUntil('the seats granted meanwhile written', () => seatCount(user) === 5, 15_000);
    // Another instance, connected once Redis is back (b's connection may still be reconnecting).
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
