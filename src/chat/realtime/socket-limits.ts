/**
 * The chat socket's limits (API.md, "Real time"), in one place: the code enforces them, and the
 * AsyncAPI document and the close codes' descriptions state them from here.
 */

/** A socket without authentication after this long is closed with 4408. */
export const AUTH_WINDOW_MS = 5_000;

/**
 * At most this many open sockets per user: on each instance, and with Redis across all of them
 * (socket-seats.ts).
 */
export const MAX_SOCKETS_PER_USER = 5;

/**
 * With Redis, an instance renews a key of its own this often at most apart: the seats of an
 * instance that was killed (it could not give them back) stop counting once its key lapses. A user
 * who held every seat there may wait this long to reconnect.
 */
export const INSTANCE_LEASE_MS = 10_000;

/**
 * Sockets from one client network (an IPv4 address, an IPv6 /64: `clientNetwork`, as every
 * per-IP limit counts) that are still waiting for their `auth` frame, at most this many at once.
 * API.md gives an unauthenticated socket 5 s, and nothing else bounded how many one client could
 * hold open in that time: thousands of idle sockets, a few KiB each. A browser sends `auth` right
 * after `open`, so even a busy office behind one address rarely has more than a few waiting at
 * once (a reconnect storm after a deploy included). Over the cap the socket closes with 4429 at
 * once; the client retries with its usual back-off.
 */
export const AWAITING_AUTH_PER_NETWORK = 50;

/** Over this much waiting to be sent to a client, it reads too slowly: closed with 4008. */
export const MAX_BUFFERED_BYTES = 1024 * 1024;

/** A frame larger than this closes the socket with 1009 (ws enforces it as `maxPayload`). */
export const MAX_FRAME_BYTES = 16 * 1024;

/** The server pings every 30 s; a socket that misses two pongs is closed. */
export const HEARTBEAT_INTERVAL_MS = 30_000;
