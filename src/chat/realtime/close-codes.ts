import type { SocketCloseReason } from '../../operations/realtime-metrics.js';
import {
  AUTH_WINDOW_MS,
  AWAITING_AUTH_PER_NETWORK,
  HEARTBEAT_INTERVAL_MS,
  MAX_BUFFERED_BYTES,
  MAX_FRAME_BYTES,
  MAX_SOCKETS_PER_USER,
} from './socket-limits.js';

/**
 * Every way the server closes a chat socket: the code a client reads (API.md's table), a short
 * text for people, the reason the metrics count, and when it happens (for /asyncapi.json).
 * Refusals are close codes, never an HTTP answer to the upgrade, because a browser can read the
 * former and not the latter.
 */
export interface Closure {
  readonly code: number;
  readonly text: string;
  readonly reason: SocketCloseReason;
  readonly when: string;
}

const closure = (code: number, text: string, reason: SocketCloseReason, when: string): Closure => ({
  code,
  text,
  reason,
  when,
});

export const Closures = {
  unauthorized: closure(
    4401,
    'invalid access token',
    'unauthorized',
    'The token (on the upgrade or in `auth`) is not a valid access token, or its session has ended.',
  ),
  tokenExpired: closure(
    4401,
    'access token expired',
    'token_expired',
    "The token's `exp` passed without an `auth` frame renewing it.",
  ),
  sessionEnded: closure(
    4401,
    'session ended',
    'session_ended',
    "The socket's session ended: logout, a password change (the other sessions) or reset, a revoked session, a replayed refresh token, account deletion.",
  ),
  authTimeout: closure(
    4408,
    'no authentication in time',
    'auth_timeout',
    `No authentication within ${AUTH_WINDOW_MS / 1000} s of the upgrade.`,
  ),
  wrongUser: closure(
    4403,
    'token for another user',
    'wrong_user',
    'An `auth` frame with a token of another user on an authenticated socket.',
  ),
  tooManySockets: closure(
    4429,
    'too many sockets for this user',
    'too_many_sockets',
    `A socket beyond the ${MAX_SOCKETS_PER_USER} one user may hold (on every instance together, when the service runs with Redis).`,
  ),
  tooManyAwaiting: closure(
    4429,
    'too many sockets waiting for authentication',
    'too_many_awaiting_auth',
    `A socket without a bearer token on the upgrade from a network (an IPv4 address, an IPv6 /64) that already holds ${AWAITING_AUTH_PER_NETWORK} sockets waiting for their \`auth\` frame (counted per instance).`,
  ),
  slowReader: closure(
    4008,
    'reading too slowly',
    'slow_reader',
    `Over ${MAX_BUFFERED_BYTES / 1024 / 1024} MiB waits to be sent to the client: it reads too slowly.`,
  ),
  shutdown: closure(
    1001,
    'server shutting down',
    'shutdown',
    'The instance is shutting down: reconnect (to another instance).',
  ),
  /** The database could not check the token: not the client's fault, it may retry. */
  unavailable: closure(
    1013,
    'try again later',
    'unavailable',
    'The token could not be checked (the database is away): try again later. A renewal that meets an outage keeps the socket open on its current token.',
  ),
} as const;

/**
 * How a socket ends without the server choosing a code of its own: `ws` closes it on a broken or
 * oversized frame, and the heartbeat cuts a client that stopped answering pings.
 */
export const TransportClosures: readonly Omit<Closure, 'text'>[] = [
  { code: 1009, reason: 'frame_too_big', when: `A frame over ${MAX_FRAME_BYTES / 1024} KiB.` },
  { code: 1002, reason: 'protocol_error', when: 'A frame that breaks the WebSocket protocol.' },
  { code: 1007, reason: 'protocol_error', when: 'A text frame that is not valid UTF-8.' },
  {
    code: 1006,
    reason: 'heartbeat_timeout',
    when: `Never sent: the client sees it when the heartbeat cut the connection without a close frame, after two unanswered pings (every ${HEARTBEAT_INTERVAL_MS / 1000} s).`,
  },
];
