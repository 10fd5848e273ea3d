/**
 * The chat socket's close codes (API.md, "Real time"; the service's README adds 1013) and what the
 * connection does after each.
 */
export const ChatCloseCodes = {
  /** Bad, expired or revoked token, or the session ended: renew the token, then reconnect. */
  unauthorized: 4401,
  /** No authentication within 5 s (a slow network): reconnect. */
  authTimeout: 4408,
  /** An `auth` frame of another user: the store holds someone else's tokens now. Stop. */
  wrongUser: 4403,
  /** A sixth socket of the user: reconnect, but only after about the backoff's cap. */
  tooManySockets: 4429,
  /** The client read too slowly: reconnect (catching up repairs what it missed). */
  slowReader: 4008,
  /** The server is shutting down: reconnect (to another instance). */
  shutdown: 1001,
  /** The server could not check the token (its database is away): reconnect. */
  tryAgainLater: 1013,
  /** This client's own: the server stopped answering, or catching up failed; reconnect. */
  noAnswer: 4000,
  /** This client's own: `close()`, or signed out. */
  normal: 1000,
} as const;

/**
 * `reconnect` with backoff; `spread` the same over a wider first window; `renew` the token first
 * (and stop if the session is over); `wait` about the backoff's cap; `stop` for good. Codes not listed (1006, an abnormal end; 1009, 1011,
 * 1012, …) reconnect: a new socket and catching up cost little, and most such ends are the network's.
 */
export type CloseVerdict = 'reconnect' | 'spread' | 'renew' | 'wait' | 'stop';

const verdicts: Readonly<Record<number, CloseVerdict>> = {
  [ChatCloseCodes.unauthorized]: 'renew',
  [ChatCloseCodes.wrongUser]: 'stop',
  [ChatCloseCodes.tooManySockets]: 'wait',
  // Every socket of an instance gets these at once: their clients come back spread out.
  [ChatCloseCodes.shutdown]: 'spread',
  [ChatCloseCodes.tryAgainLater]: 'spread',
};

export function closeVerdict(code: number): CloseVerdict {
  return verdicts[code] ?? 'reconnect';
}
