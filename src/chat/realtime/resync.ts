import type { FastifyBaseLogger } from 'fastify';
import { findLiveSessionIds } from '../../accounts/caller.store.js';
import type { ServiceContext } from '../../context.js';
import type { ChatSocket } from './chat-socket.js';
import { Closures } from './close-codes.js';
import { resyncFrame } from './frames.js';

/** Sessions looked up per query when rechecking every socket's session. */
const SESSION_CHECK_BATCH = 500;

/**
 * Events may have been lost (the Redis subscription came back): every authenticated socket is told
 * to refetch, and sockets whose session ended meanwhile (its `session.revoked` may be among the
 * lost) close now rather than at their token's expiry.
 */
export function resyncSockets(
  sockets: Iterable<ChatSocket>,
  ctx: Pick<ServiceContext, 'db' | 'clock'>,
  log: FastifyBaseLogger,
): void {
  const bySession = new Map<string, ChatSocket[]>();
  for (const socket of sockets) {
    if (!socket.ready || socket.sessionId === undefined) continue;
    socket.send(resyncFrame);
    const held = bySession.get(socket.sessionId);
    if (held === undefined) bySession.set(socket.sessionId, [socket]);
    else held.push(socket);
  }
  closeEndedSessions(bySession, ctx).catch((error: unknown) =>
    log.warn({ err: error }, 'chat socket: could not recheck sessions after a resync'),
  );
}

async function closeEndedSessions(
  bySession: Map<string, ChatSocket[]>,
  { db, clock }: Pick<ServiceContext, 'db' | 'clock'>,
): Promise<void> {
  const ids = [...bySession.keys()];
  for (let i = 0; i < ids.length; i += SESSION_CHECK_BATCH) {
    const batch = ids.slice(i, i + SESSION_CHECK_BATCH);
    const live = await findLiveSessionIds(db, batch, clock());
    for (const id of batch) {
      if (live.has(id)) continue;
      for (const socket of bySession.get(id) ?? []) socket.close(Closures.sessionEnded);
    }
  }
}
