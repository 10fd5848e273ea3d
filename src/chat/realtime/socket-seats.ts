import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';

/** One socket's place among the MAX_SOCKETS_PER_USER its user may hold across every instance. */
export interface Seat {
  /**
   * The socket closed: the seat is free for another, once this resolves (it never rejects: a seat
   * that cannot be given back goes with its instance, see INSTANCE_LEASE_MS).
   */
  release(): Promise<void>;
}

/**
 * Where a user's open sockets are counted against the per-user cap across instances. Each
 * instance also counts its own (sockets.ts), which is all the cap needs on one instance; with
 * Redis, the seats make it hold across the fleet.
 */
export interface SocketSeats {
  /** A seat for one more socket of `userId`, or undefined when the user holds them all. */
  take(userId: string): Promise<Seat | undefined>;
  close(): Promise<void>;
}

const NO_SEAT: Seat = Object.freeze({ release: async () => {} });

/** One instance: its own count is the whole count. */
export const instanceSeats: SocketSeats = Object.freeze({
  take: async () => NO_SEAT,
  close: async () => {},
});

/** This instance's count alone by default; with REDIS_URL, every instance's (redis-seats.ts). */
export async function openSocketSeats(
  config: Config,
  log: FastifyBaseLogger,
): Promise<SocketSeats> {
  if (config.redisUrl === undefined) return instanceSeats;
  const { RedisSocketSeats } = await import('./redis-seats.js');
  return RedisSocketSeats.connect(config.redisUrl, log, { prefix: config.redisPrefix });
}
