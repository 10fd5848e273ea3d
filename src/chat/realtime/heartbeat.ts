import type { ChatSocket } from './chat-socket.js';

/** How often deadlines (the auth window, token expiry) are checked: the lateness they may have. */
export const DEADLINE_CHECK_MS = 250;

/** The sockets an instance holds (the registry). */
export interface HeldSockets {
  readonly size: number;
  sockets(): IterableIterator<ChatSocket>;
}

/**
 * The sockets' clocks: one timer for the whole instance rather than timers per socket, so a
 * socket costs no timer object, and deadlines follow the app's clock (which tests move). Each
 * tick checks every deadline and pings the next slice of the sockets, so that every socket is
 * pinged once per interval without one burst of writes for all of them: 10,000 pings at once
 * held the event loop for 0.4 s, every 30 s, and every message waiting meanwhile with it.
 */
export function startSocketClocks(
  held: HeldSockets,
  clock: () => number,
  heartbeatIntervalMs: number,
): () => void {
  const tickMs = Math.min(DEADLINE_CHECK_MS, heartbeatIntervalMs);
  const ticksPerRound = Math.max(1, Math.round(heartbeatIntervalMs / tickMs));
  // A round pings every socket once, a share of them each tick. A Set's iterator skips sockets
  // removed since it started and reaches those added: they are pinged in the same round.
  let round: IterableIterator<ChatSocket> | undefined;
  let tick = 0;
  let pinged = 0;
  const pingSlice = () => {
    round ??= held.sockets();
    tick += 1;
    // The round's last tick pings all that is left: sockets that closed mid-round shrink the
    // share each tick owes, and must not leave the rest unpinged until the next round.
    const due = tick >= ticksPerRound ? Infinity : Math.ceil((held.size * tick) / ticksPerRound);
    for (; pinged < due; pinged++) {
      const next = round.next();
      if (next.done === true) break;
      next.value.heartbeat();
    }
    if (tick < ticksPerRound) return;
    round = undefined;
    tick = 0;
    pinged = 0;
  };
  const timer = setInterval(() => {
    const now = clock();
    for (const socket of held.sockets()) socket.closeIfOverdue(now);
    pingSlice();
  }, tickMs);
  timer.unref();
  return () => clearInterval(timer);
}
