import type { SocketCloseReason } from '../../operations/realtime-metrics.js';

/**
 * Every way the server closes a chat socket: the code a client reads (API.md's table), a short
 * text for people, and the reason the metrics count. Refusals are close codes, never an HTTP
 * answer to the upgrade, because a browser can read the former and not the latter.
 */
export interface Closure {
  readonly code: number;
  readonly text: string;
  readonly reason: SocketCloseReason;
}

const closure = (code: number, text: string, reason: SocketCloseReason): Closure => ({
  code,
  text,
  reason,
});

export const Closures = {
  unauthorized: closure(4401, 'invalid access token', 'unauthorized'),
  tokenExpired: closure(4401, 'access token expired', 'token_expired'),
  sessionEnded: closure(4401, 'session ended', 'session_ended'),
  authTimeout: closure(4408, 'no authentication in time', 'auth_timeout'),
  wrongUser: closure(4403, 'token for another user', 'wrong_user'),
  tooManySockets: closure(4429, 'too many sockets for this user', 'too_many_sockets'),
  slowReader: closure(4008, 'reading too slowly', 'slow_reader'),
  shutdown: closure(1001, 'server shutting down', 'shutdown'),
  /** The database could not check the token: not the client's fault, it may retry. */
  unavailable: closure(1013, 'try again later', 'unavailable'),
} as const;
