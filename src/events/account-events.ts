import type { BusEvent, EventBus } from './bus.js';

/**
 * Events about an account's sessions, for whoever holds its chat sockets (on any instance): a
 * socket of an ended session closes with 4401 at once instead of at its token's expiry. They
 * travel on the user's own channel like chat events, but are internal: never written to a client.
 */

const SESSION_REVOKED = 'session.revoked';
const ACCOUNT_DELETED = 'account.deleted';

interface SessionRevokedEvent extends BusEvent {
  readonly type: typeof SESSION_REVOKED;
  readonly here_too: true;
  readonly session_ids?: readonly string[];
  /** Only from instances of an earlier release, during a rolling upgrade. */
  readonly all_except?: string | null;
}

/**
 * Call after the transaction that ended the sessions `sessionIds` has committed. By id, never
 * "all of the user's": an event that arrives late (Redis is not instant) must not close the
 * socket of a session that began after it, like the login that follows a password reset.
 */
export function publishSessionsEnded(
  bus: EventBus,
  userId: string,
  sessionIds: readonly string[],
): void {
  if (sessionIds.length === 0) return;
  // Closing a socket twice is harmless: this instance acts at once, whatever Redis does.
  bus.publish([userId], { type: SESSION_REVOKED, here_too: true, session_ids: sessionIds });
}

/** Call after the account's deletion has committed. */
export function publishAccountDeleted(bus: EventBus, userId: string): void {
  bus.publish([userId], { type: ACCOUNT_DELETED, here_too: true });
}

/**
 * Whether `event` ends the session `sessionId`: an account deletion ends all of them. Answers
 * undefined for an event that is not about sessions at all.
 */
export function endsSession(event: BusEvent, sessionId: string): boolean | undefined {
  if (event.type === ACCOUNT_DELETED) return true;
  if (event.type !== SESSION_REVOKED) return undefined;
  const { session_ids: ids, all_except: except } = event as SessionRevokedEvent;
  if (Array.isArray(ids)) return ids.includes(sessionId);
  return except !== sessionId;
}
