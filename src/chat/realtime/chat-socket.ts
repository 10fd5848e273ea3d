import { WebSocket } from 'ws';
import type { SocketCloseReason } from '../../operations/realtime-metrics.js';
import { Closures, type Closure } from './close-codes.js';

/** Over this much waiting to be sent to a client, it reads too slowly: closed with 4008. */
export const MAX_BUFFERED_BYTES = 1024 * 1024;
/** Pings a client may leave unanswered; at the next heartbeat the socket is dropped. */
const MISSED_PONGS_ALLOWED = 2;
/**
 * How long a socket gets to answer our close frame before it is cut: ws would wait 30 s, and a
 * client that never answers would hold every socket the server closed that long (a closed socket
 * no longer counts against its user's cap, so one user could pile them up).
 */
const CLOSE_GRACE_MS = 2_000;
/** ws's error code for a frame over `maxPayload`. */
const FRAME_TOO_BIG = 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH';

/**
 * One client's socket and what the server knows of it. Kept small on purpose: an instance holds
 * tens of thousands of these, and the state here is all a socket costs beyond `ws` itself.
 */
export class ChatSocket {
  userId: string | undefined;
  sessionId: string | undefined;
  /** When the socket closes unless something comes first: the auth window, then `exp`. */
  deadline: number;
  deadlineClosure: Closure = Closures.authTimeout;
  /** `ready` was sent: events flow to it. */
  ready = false;
  /** An access token is being verified: further `auth` frames wait for the answer. */
  verifying = false;
  /** The latest token sent while another was being verified: checked next. */
  pendingToken: string | undefined;
  /** The client's network while the socket counts as waiting for its `auth` frame (awaiting-auth.ts). */
  awaitingFrom: string | undefined;
  /** The conversations a typing frame is being relayed to (made on the first typing frame). */
  typingChecks: Set<string> | undefined;
  /** Cuts a refused socket that leaves our close frame unanswered (see `close`). */
  private cut: NodeJS.Timeout | undefined;
  private missedPongs = 0;
  private closedAs: SocketCloseReason | undefined;

  constructor(
    readonly ws: WebSocket,
    authDeadline: number,
  ) {
    this.deadline = authDeadline;
    ws.on('pong', () => {
      this.missedPongs = 0;
    });
    ws.on('close', () => clearTimeout(this.cut));
    // ws has already closed the socket (1009 for a frame over maxPayload, 1002 or 1007 for a
    // broken one); the close event that follows cannot tell which.
    ws.on('error', (error: Error & { code?: string }) => {
      this.closedAs ??= error.code === FRAME_TOO_BIG ? 'frame_too_big' : 'protocol_error';
    });
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /**
   * Writes a text frame, unless more than 1 MiB already waits for this client: then it is closed
   * with 4008 instead, so what one slow reader holds stays bounded and nobody else waits for it.
   */
  send(frame: string | Buffer): boolean {
    if (!this.isOpen) return false;
    if (this.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.close(Closures.slowReader);
      return false;
    }
    this.ws.send(frame, { binary: false });
    return true;
  }

  /** Authenticated as `userId`/`sessionId` until `expiresAt` (ms since the epoch). */
  authenticate(userId: string, sessionId: string, expiresAt: number): void {
    this.userId = userId;
    this.sessionId = sessionId;
    this.deadline = expiresAt;
    this.deadlineClosure = Closures.tokenExpired;
  }

  /** Closes it if its deadline has passed; a renewal being checked gets its answer first. */
  closeIfOverdue(now: number): void {
    if (now < this.deadline || (this.ready && this.verifying)) return;
    this.close(this.deadlineClosure);
  }

  /** Closes with `closure`'s code; the first reason given is the one counted. */
  close(closure: Closure): void {
    if (!this.isOpen) return;
    this.closedAs = closure.reason;
    this.ready = false;
    this.ws.close(closure.code, closure.text);
    this.cut = setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  /** The heartbeat's turn: drop a client that left two pings unanswered, else ping it. */
  heartbeat(): void {
    if (!this.isOpen) return;
    if (this.missedPongs >= MISSED_PONGS_ALLOWED) {
      this.closedAs = 'heartbeat_timeout';
      this.ws.terminate(); // it does not answer: a closing handshake would wait for nothing
      return;
    }
    this.missedPongs += 1;
    this.ws.ping();
  }

  /** Why it closed, once it has: the server's reason, else the client's doing. */
  get closeReason(): SocketCloseReason {
    return this.closedAs ?? 'client';
  }
}
