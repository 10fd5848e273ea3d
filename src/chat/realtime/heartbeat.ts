import type { ChatSocket } from './chat-socket.js';

/** API.md: the server pings every 30 s; a socket that misses two pongs is closed. */
export const HEARTBEAT_INTERVAL_MS = 30_000;
/** How often deadlines (the auth window, token expiry) are checked: the lateness they may have. */
export const DEADLINE_CHECK_MS = 250;

/**
 * The sockets' clocks: one timer each for the whole instance rather than timers per socket, so a
 * socket costs no timer object, and deadlines follow the app's clock (which tests move).
 */
export function startSocketClocks(
  sockets: () => Iterable<ChatSocket>,
  clock: () => number,
  heartbeatIntervalMs: number,
): () => void {
  const heartbeat = setInterval(() => {
    for (const socket of sockets()) socket.heartbeat();
  }, heartbeatIntervalMs);
  const deadlines = setInterval(() => {
    const now = clock();
    for (const socket of sockets()) socket.closeIfOverdue(now);
  }, DEADLINE_CHECK_MS);
  heartbeat.unref();
  deadlines.unref();
  return () => {
    clearInterval(heartbeat);
    clearInterval(deadlines);
  };
}
