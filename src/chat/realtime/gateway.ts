import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { verifyAccessToken, type Caller } from '../../accounts/caller.js';
import type { AccessClaims } from '../../security/access-tokens.js';
import type { ServiceContext } from '../../context.js';
import { isDatabaseUnavailable } from '../../db/outage.js';
import { ApiError } from '../../errors.js';
import type { OutageLog } from '../../outage-log.js';
import type { RealtimeMetrics } from '../../operations/realtime-metrics.js';
import { AwaitingAuthentication } from './awaiting-auth.js';
import { ChatSocket } from './chat-socket.js';
import { Closures, type Closure } from './close-codes.js';
import { socketDelivery } from './delivery.js';
import { parseClientFrame, pongFrame, readyFrame, type ClientFrame } from './frames.js';
import { startSocketClocks } from './heartbeat.js';
import { AUTH_WINDOW_MS, HEARTBEAT_INTERVAL_MS } from './socket-limits.js';
import { resyncSockets } from './resync.js';
import { relayTyping } from './typing.js';
import type { SocketSeats } from './socket-seats.js';
import { SocketRegistry } from './sockets.js';

class Refusal {
  constructor(readonly closure: Closure) {}
}

/** Shutdown: how long clients get to answer the 1001 close before their sockets are cut. */
const SHUTDOWN_CLOSE_WAIT_MS = 2_000;
/** Typing frames checked at once per socket (each for another conversation); more are dropped. */
const TYPING_CHECKS_PER_SOCKET = 4;

export interface GatewayOptions {
  readonly heartbeatIntervalMs?: number;
  /** How long a closing socket gets before it is cut (chat-socket.ts, CLOSE_GRACE_MS). */
  readonly closeGraceMs?: number;
}

export interface GatewayDependencies {
  readonly ctx: ServiceContext;
  readonly metrics: RealtimeMetrics;
  readonly log: FastifyBaseLogger;
  /** Where a token check that met an unavailable database is counted (not one line each). */
  readonly databaseOutage: OutageLog;
  /** Where each user's sockets are counted across instances (this one's alone by default). */
  readonly seats?: SocketSeats;
}

/**
 * The chat socket's life: authentication (upgrade header or `auth` frame), `ready`, renewal
 * before `exp`, client frames, and every refusal as a close code. Delivery of events to
 * authenticated sockets is the registry's and delivery.ts's.
 */
export class ChatGateway {
  private readonly ctx: ServiceContext;
  private readonly metrics: RealtimeMetrics;
  private readonly registry: SocketRegistry;
  private readonly awaiting = new AwaitingAuthentication();
  private readonly stopClocks: () => void;
  private readonly stopResync: () => void;
  private closing = false;
  private readonly closeGraceMs: number | undefined;

  constructor(
    private readonly deps: GatewayDependencies,
    options: GatewayOptions = {},
  ) {
    const { ctx, metrics, log } = deps;
    this.ctx = ctx;
    this.metrics = metrics;
    this.closeGraceMs = options.closeGraceMs;
    this.registry = new SocketRegistry(ctx.events, socketDelivery(metrics, ctx.clock), deps.seats);
    this.stopClocks = startSocketClocks(
      this.registry,
      ctx.clock,
      options.heartbeatIntervalMs ?? HEARTBEAT_INTERVAL_MS,
    );
    this.stopResync = ctx.events.onResync(() => resyncSockets(this.registry.sockets(), ctx, log));
  }

  /**
   * A freshly upgraded socket from the client network `network` (`clientNetwork`), with the
   * upgrade's bearer token if it carried one; without one, it waits for an `auth` frame, and counts
   * against its network's share of such sockets (awaiting-auth.ts) until it authenticates or closes.
   */
  accept(ws: WebSocket, headerToken: string | undefined, network: string): void {
    const socket = new ChatSocket(ws, this.ctx.clock() + AUTH_WINDOW_MS, this.closeGraceMs);
    this.registry.add(socket);
    this.metrics.socketOpened();
    ws.on('close', () => this.closed(socket));
    ws.on('message', (data, isBinary) => {
      const frame = parseClientFrame(data, isBinary);
      if (frame !== undefined) this.receive(socket, frame);
    });
    if (this.closing) return socket.close(Closures.shutdown);
    if (headerToken !== undefined) {
      void this.authenticate(socket, headerToken);
      return;
    }
    if (!this.awaiting.admit(network)) return socket.close(Closures.tooManyAwaiting);
    socket.awaitingFrom = network;
  }

  /** Fastify's preClose: every socket gets 1001; those that do not answer are cut. */
  async shutdown(): Promise<void> {
    this.closing = true;
    this.stopClocks();
    this.stopResync();
    await this.registry.releaseSeats();
    for (const socket of this.registry.sockets()) socket.close(Closures.shutdown);
    const deadline = Date.now() + SHUTDOWN_CLOSE_WAIT_MS;
    while (this.registry.size > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (const socket of this.registry.sockets()) socket.ws.terminate();
  }

  private receive(socket: ChatSocket, frame: ClientFrame): void {
    if (frame.type === 'auth') {
      // One check at a time; a token sent meanwhile is checked next (the latest one only).
      if (socket.verifying) socket.pendingToken = frame.access_token;
      else void this.authenticate(socket, frame.access_token);
      return;
    }
    // API.md answers every ping; before `ready` a pong tells nothing but that the socket is open.
    if (frame.type === 'ping') socket.send(pongFrame);
    // Typing counts only once authenticated.
    else if (frame.type === 'typing' && socket.ready) this.typing(socket, frame.conversation_id);
  }

  /**
   * One typing frame at a time per socket and conversation, and a few conversations at once: a
   * flood waits for nothing and costs few queries, and typing in one conversation never holds up
   * another's.
   */
  private typing(socket: ChatSocket, conversationId: string): void {
    if (socket.userId === undefined) return;
    const checks = (socket.typingChecks ??= new Set());
    if (checks.has(conversationId) || checks.size >= TYPING_CHECKS_PER_SOCKET)
      return this.metrics.typing('busy');
    checks.add(conversationId);
    relayTyping(this.ctx, socket.userId, conversationId)
      .then((outcome) => this.metrics.typing(outcome))
      .catch((error: unknown) => this.typingFailed(error))
      .finally(() => checks.delete(conversationId));
  }

  /** A typing frame that could not be checked: the database away is one outage, not a line each. */
  private typingFailed(error: unknown): void {
    this.metrics.typing('failed');
    if (isDatabaseUnavailable(error as Error)) this.deps.databaseOutage.failed(error);
    else this.deps.log.warn({ err: error }, 'chat socket: typing failed');
  }

  /** First authentication, or renewal of an authenticated socket with a fresh token. */
  private async authenticate(socket: ChatSocket, token: string): Promise<void> {
    socket.beginCheck(this.ctx.clock());
    try {
      if (socket.ready) return await this.renew(socket, token);
      // The window stays open while the token is checked, but not forever.
      socket.deadline = this.ctx.clock() + AUTH_WINDOW_MS;
      await this.admit(socket, token);
    } finally {
      socket.verifying = false;
      const next = socket.pendingToken;
      socket.pendingToken = undefined;
      if (next !== undefined && socket.isOpen) void this.authenticate(socket, next);
    }
  }

  private async renew(socket: ChatSocket, token: string): Promise<void> {
    const verdict = await this.verify(token);
    if (!socket.isOpen) return;
    // The database could not answer: the token in use stays valid until its own expiry.
    if (verdict instanceof Refusal) {
      if (verdict.closure !== Closures.unavailable) socket.close(verdict.closure);
      return;
    }
    if (verdict.userId !== socket.userId) return socket.close(Closures.wrongUser);
    const movedSession = verdict.sessionId !== socket.sessionId;
    socket.authenticate(verdict.userId, verdict.sessionId, verdict.expiresAt);
    if (!movedSession) return;
    // The new session's end, if it came while it was being checked, named a session this socket
    // did not have yet, and went by: look at it once more, now that the socket has it.
    const again = await this.verify(token);
    if (socket.isOpen && again instanceof Refusal && again.closure !== Closures.unavailable)
      socket.close(again.closure);
  }

  /**
   * The token's signature names the user, which is all subscribing needs; its session is looked
   * up once the subscription is in place. A logout that commits before that lookup is seen by
   * it, and one that commits after is published to a listening socket: one session lookup per
   * socket, not one before subscribing and one after (a reconnect storm pays for every query).
   */
  private async admit(socket: ChatSocket, token: string): Promise<void> {
    const claims = await this.claims(token);
    if (!socket.isOpen) return;
    if (claims instanceof Refusal) return socket.close(claims.closure);
    socket.authenticate(claims.userId, claims.sessionId, claims.expiresAt);
    this.stopAwaiting(socket); // a signed token: the per-user cap counts it from here
    const attached = await this.registry.attach(socket);
    const caller = await this.verify(token);
    if (!socket.isOpen) return;
    if (caller instanceof Refusal) return socket.close(caller.closure);
    if (!attached) return socket.close(Closures.tooManySockets);
    // Its session may end before the token does.
    socket.authenticate(caller.userId, caller.sessionId, caller.expiresAt);
    socket.ready = true;
    socket.send(readyFrame(caller.userId, caller.sessionId));
  }

  /** The token's signed claims, without the session (no database unless the keys are reloaded). */
  private async claims(token: string): Promise<AccessClaims | Refusal> {
    try {
      return (await this.ctx.accessTokens.verify(token)) ?? new Refusal(Closures.unauthorized);
    } catch (error) {
      return this.failed(error);
    }
  }

  /** The token's caller, or why the socket cannot have one. */
  private async verify(token: string): Promise<Caller | Refusal> {
    try {
      return await verifyAccessToken(this.ctx, token);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401)
        return new Refusal(Closures.unauthorized);
      return this.failed(error);
    }
  }

  /** A token check that could not run: not the client's fault, it may retry (1013). */
  private failed(error: unknown): Refusal {
    if (isDatabaseUnavailable(error as Error)) this.deps.databaseOutage.failed(error);
    else this.deps.log.error({ err: error }, 'chat socket: could not verify a token');
    return new Refusal(Closures.unavailable);
  }

  private stopAwaiting(socket: ChatSocket): void {
    if (socket.awaitingFrom === undefined) return;
    this.awaiting.release(socket.awaitingFrom);
    socket.awaitingFrom = undefined;
  }

  private closed(socket: ChatSocket): void {
    this.stopAwaiting(socket);
    this.registry.remove(socket);
    this.metrics.socketClosed(socket.closeReason);
    this.deps.log.debug({ reason: socket.closeReason }, 'chat socket closed');
  }
}
