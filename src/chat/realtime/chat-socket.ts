import { WebSocket } from 'ws';
import type { SocketCloseReason } from '../../operations/realtime-metrics.js';
import { Closures, type Closure } from './close-codes.js';
import { MAX_BUFFERED_BYTES } from './socket-limits.js';
import type { Seat } from './socket-seats.js';

/** Pings a client may leave unanswered; at the next heartbeat the socket is dropped. */
const MISSED_PONGS_ALLOWED = 2;
/**
 * How long a closing socket gets to finish before it is cut: after a close frame, whoever sent it,
 * ws waits 30 s for the client to end its connection, and a client that never does would hold
 * every socket it closed (or the server closed) that long (a closing socket no longer counts
 * against its user's cap, so one user could pile them up).
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
  /** When the check under way started (see `closeIfOverdue`). */
  private verifyingSince = 0;
  /** The latest token sent while another was being verified: checked next. */
  pendingToken: string | undefined;
  /** The client's network while the socket counts as waiting for its `auth` frame (awaiting-auth.ts). */
  awaitingFrom: string | undefined;
  /** The conversations a typing frame is being relayed to (made on the first typing frame). */
  typingChecks: Set<string> | undefined;
  /** Its place among its user's sockets on every instance (socket-seats.ts), once it is counted. */
  seat: Seat | undefined;
  /** Cuts a refused socket that leaves our close frame unanswered (see `close`). */
  private cut: NodeJS.Timeout | undefined;
  private missedPongs = 0;
  private closedAs: SocketCloseReason | undefined;

  constructor(
    readonly ws: WebSocket,
    authDeadline: number,
    private readonly closeGraceMs = CLOSE_GRACE_MS,
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

  /** A token's check starts at `now`; further `auth` frames wait for its answer. */
  beginCheck(now: number): void {
    this.verifying = true;
    this.verifyingSince = now;
  }

  /** Authenticated as `userId`/`sessionId` until `expiresAt` (ms since the epoch). */
  authenticate(userId: string, sessionId: string, expiresAt: number): void {
    this.userId = userId;
    this.sessionId = sessionId;
    this.deadline = expiresAt;
    this.deadlineClosure = Closures.tokenExpired;
  }

  /**
   * Closes it if its deadline has passed; a renewal sent in time, still being checked, gets its
   * answer first. Not one checked after the deadline: a client that keeps a token queued while the
   * database is away would chain checks, each refused as unavailable, and never be closed. Cuts a
   * socket the client began to close that is still not closed after its close grace.
   */
  closeIfOverdue(now: number): void {
    if (this.ws.readyState === WebSocket.CLOSING) return this.cutLater();
    const renewingInTime = this.ready && this.verifying && this.verifyingSince < this.deadline;
    if (now < this.deadline || renewingInTime) return;
    this.close(this.deadlineClosure);
  }

  /**
   * Closes with `closure`'s code; the first reason given is the one counted. Its seat is free at
   * once, as its place in this instance's count is (the client may take a while to answer).
   */
  close(closure: Closure): void {
    if (!this.isOpen) return;
    this.closedAs = closure.reason;
    this.ready = false;
    this.ws.close(closure.code, closure.text);
    void this.releaseSeat();
    this.cutLater();
  }

  /** Gives its seat back, if it holds one; resolves once it is given back. */
  releaseSeat(): Promise<void> {
    const { seat } = this;
    this.seat = undefined;
    return seat === undefined ? Promise.resolve() : seat.release();
  }

  private cutLater(): void {
    this.cut ??= setTimeout(() => this.ws.terminate(), this.closeGraceMs).unref();
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
