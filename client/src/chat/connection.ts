import { accountOf } from '../session.js';
import type { Tokens } from '../token-store.js';
import { Backoff, DEFAULT_BACKOFF, retryAfterMs, type BackoffPolicy } from './backoff.js';
import { ChatCatchUp, type ChatHistory } from './catch-up.js';
import { ChatCloseCodes, closeVerdict } from './close-codes.js';
import { ChatListeners, type ChatEvent, type ChatEventMap, type ChatState } from './events.js';
import { authFrame, parseServerFrame, pingFrame, typingFrame } from './frames.js';
import { DEFAULT_LIVENESS, Liveness, type LivenessOptions } from './liveness.js';
import { Renewal } from './renewal.js';

/** Any WebSocket implementation with the browser's API (Node 22+'s global, React Native's, …). */
export type WebSocketConstructor = new (url: string) => WebSocket;

export interface ChatConnectionOptions extends LivenessOptions {
  /** Versions the app already has (kept from an earlier run, say): `[conversationId, version]`. */
  readonly versions?: Iterable<readonly [string, number]>;
  /** Default: the global `WebSocket` (browsers, Node 22+, React Native). */
  readonly webSocketImpl?: WebSocketConstructor;
  readonly backoff?: BackoffPolicy;
  /** Numbers in [0, 1) for the backoff's jitter; default `Math.random`. */
  readonly random?: () => number;
  /** Messages per `changes` page while catching up (1–200); default 100. */
  readonly pageSize?: number;
  /**
   * How long a catch-up request may go unanswered (ms); default 20 s. Then it fails, and the
   * connection reconnects (a request that never ends would hold every later event).
   */
  readonly catchUpTimeoutMs?: number;
}

/** What the connection needs of the account client. */
export interface ChatDependencies {
  /** `ws(s)://…/api/chat/ws`. */
  readonly url: string;
  /** Tokens with at least 30 s left (renewed first if needed); `null` when signed out. */
  readonly tokens: () => Promise<Tokens | null>;
  /** Tokens instead of `refused` (one refresh for all who ask at once); `null` once signed out. */
  readonly renew: (refused: Tokens) => Promise<Tokens | null>;
  /** The client's clock, which the tokens' `expiresAt` is on. */
  readonly now: () => number;
  readonly history: ChatHistory;
  /** Calls the listener after each sign-in and sign-out (not refresh); answers the unsubscribe. */
  readonly accountChanges?: (listener: (tokens: Tokens | null) => void) => () => void;
}

/** `WebSocket.OPEN`, the same in every implementation. */
const OPEN = 1;
/** A socket not `ready` this long after it was made is dropped (a connect or auth that hangs). */
const READY_TIMEOUT_MS = 15_000;

/**
 * The chat socket, kept open: authenticates with the first frame, sends a fresh token before the
 * current one expires, reconnects with backoff after every close that does not mean stop, and
 * hands the app each change once and in order (ChatCatchUp). Created by `connectChat()`.
 */
export class ChatConnection {
  private readonly listeners = new ChatListeners();
  private readonly catchUp: ChatCatchUp;
  private readonly backoff: Backoff;
  private readonly webSocketImpl: WebSocketConstructor;
  private current: ChatState = { status: 'connecting', attempt: 0 };
  private socket: WebSocket | undefined;
  /** Aborted when `socket` is let go: its catch-up's requests stop (ChatCatchUp.receive). */
  private socketScope: AbortController | undefined;
  /** The tokens the socket authenticated with (last). */
  private tokens: Tokens | undefined;
  /** When the socket's catch-up after `ready` succeeded (see Backoff.closedAfter). */
  private syncedAt: number | undefined;
  private liveness: Liveness | undefined;
  private readyTimer: ReturnType<typeof setTimeout> | undefined;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private renewal: Renewal | undefined;
  private stopped = false;
  /** The user of the first `ready`: the only one this connection serves. */
  private userId: string | undefined;
  /** Stops listening to sign-ins and sign-outs. */
  private readonly unwatch: () => void;
  /** Sign-ins and sign-outs seen (see `currentTokens`). */
  private accountChanges = 0;
  /** The service's `Retry-After` of the error that ends this attempt: the next waits as long. */
  private waitAtLeastMs = 0;
  private readonly deps: ChatDependencies;
  private readonly options: ChatConnectionOptions;

  constructor(deps: ChatDependencies, options: ChatConnectionOptions = {}) {
    this.deps = deps;
    this.options = options;
    // Nothing is handed over after close(), not even what a catch-up under way still reads.
    const deliver = (event: ChatEvent) => {
      if (!this.stopped) this.listeners.deliver(event);
    };
    this.catchUp = new ChatCatchUp(deps.history, deliver, [...(options.versions ?? [])]);
    this.backoff = new Backoff(backoffPolicy(options.backoff), options.random ?? Math.random);
    this.webSocketImpl = options.webSocketImpl ?? globalThis.WebSocket;
    this.unwatch = deps.accountChanges?.((tokens) => this.accountChanged(tokens)) ?? (() => {});
    // Next tick: listeners added right after `connectChat()` see every state from `connecting` on.
    queueMicrotask(() => void this.open());
  }

  get state(): ChatState {
    return this.current;
  }

  /** Listens to an event type, `message` (every message event), `state` or `error`; returns the unsubscribe. */
  on<Type extends keyof ChatEventMap>(
    type: Type,
    listener: (value: ChatEventMap[Type]) => void,
  ): () => void {
    return this.listeners.on(type, listener);
  }

  /** The app has this conversation's messages up to `version` (from the REST calls): follow it from there. */
  track(conversationId: string, version: number): void {
    this.catchUp.track(conversationId, version);
  }

  forget(conversationId: string): void {
    this.catchUp.forget(conversationId);
  }

  /** The last version handed over in the conversation, or undefined when it is not tracked. */
  version(conversationId: string): number | undefined {
    return this.catchUp.version(conversationId);
  }

  /** Tells the peer the user is typing (dropped by the service beyond one per 3 s); no-op unless open. */
  typing(conversationId: string): void {
    if (this.current.status === 'open') this.send(typingFrame(conversationId));
  }

  /** Resolves once every frame received so far has been handled (its catching up included). */
  settled(): Promise<void> {
    return this.catchUp.settled();
  }

  /** Closes the socket for good. */
  close(): void {
    this.finish({ status: 'closed', closeCode: ChatCloseCodes.normal, reason: 'closed' });
  }

  private async open(): Promise<void> {
    if (this.stopped) return; // closed before the first tick, or before a reconnect's timer
    this.setState({ status: 'connecting', attempt: this.backoff.attempt });
    let tokens: Tokens | null;
    try {
      tokens = await this.currentTokens();
    } catch (error) {
      if (this.stopped) return;
      this.listeners.emit('error', error); // the refresh failed: network, 429, 503
      if (this.stopped) return; // a listener closed the connection
      this.waitAtLeast(error);
      return this.retry(undefined);
    }
    if (this.stopped) return;
    if (tokens === null) return this.finish({ status: 'signed_out' });
    let socket: WebSocket;
    try {
      socket = new this.webSocketImpl(this.deps.url);
    } catch (error) {
      // A browser refuses ws:// from an https page (SecurityError); no WebSocket at all is a
      // TypeError: neither gets better by trying again.
      this.listeners.emit('error', error);
      return this.finish({
        status: 'closed',
        closeCode: ChatCloseCodes.normal,
        reason: 'no socket',
      });
    }
    this.attach(socket, tokens);
  }

  /**
   * The store's tokens, read again if the account changed while they were read (an asynchronous
   * store answers with what it held when the read began): no socket opens for a user who left.
   */
  private async currentTokens(): Promise<Tokens | null> {
    for (;;) {
      const changes = this.accountChanges;
      const tokens = await this.deps.tokens();
      if (changes === this.accountChanges || this.stopped) return tokens;
    }
  }

  private attach(socket: WebSocket, tokens: Tokens): void {
    this.socket = socket;
    const scope = new AbortController();
    this.socketScope = scope;
    this.tokens = tokens;
    // Browsers cannot set an Authorization header on the upgrade: the token goes in the first
    // frame (never in the URL, which proxies log).
    socket.onopen = () => socket.send(authFrame(tokens.accessToken));
    socket.onmessage = (event) => this.received(socket, scope.signal, event.data);
    socket.onclose = (event) => this.closed(socket, event.code, event.reason);
    socket.onerror = () => undefined; // the close that follows says what happened
    this.readyTimer = setTimeout(() => this.drop(socket, 'not ready in time'), READY_TIMEOUT_MS);
  }

  private received(socket: WebSocket, scope: AbortSignal, data: unknown): void {
    if (socket !== this.socket) return;
    this.liveness?.heard();
    const frame = parseServerFrame(data);
    if (frame === undefined || frame.type === 'pong') return;
    if (frame.type === 'ready') this.ready(socket, frame.user_id, frame.session_id);
    if (this.stopped) return; // `ready` of another user
    this.catchUp.receive(frame, scope).then(
      () => {
        if (frame.type === 'ready' && socket === this.socket) this.syncedAt = Date.now();
      },
      (error: unknown) => {
        if (socket !== this.socket) return; // closed, or dropped: its catch-up no longer matters
        this.listeners.emit('error', error);
        this.waitAtLeast(error);
        this.drop(socket, 'catching up failed'); // the resync after the next `ready` repairs it
      },
    );
  }

  private ready(socket: WebSocket, userId: string, sessionId: string): void {
    // A reconnection signed in with whatever the store holds now: another user's events must not
    // reach this user's listeners (and versions), as the renewal of an open socket ensures (4403).
    this.userId ??= userId;
    if (userId !== this.userId) {
      return this.finish({
        status: 'closed',
        closeCode: ChatCloseCodes.wrongUser,
        reason: 'the store holds another user now',
      });
    }
    clearTimeout(this.readyTimer);
    // The service reads `ping` only once it said `ready`.
    this.liveness = new Liveness(
      {
        pingIntervalMs: this.options.pingIntervalMs ?? DEFAULT_LIVENESS.pingIntervalMs,
        pongTimeoutMs: this.options.pongTimeoutMs ?? DEFAULT_LIVENESS.pongTimeoutMs,
      },
      () => this.send(pingFrame),
      () => this.drop(socket, 'no answer'),
    );
    if (this.tokens !== undefined) this.renewal = this.renewalOf(this.tokens);
    this.setState({ status: 'open', userId, sessionId });
  }

  /**
   * A sign-out ends the connection at once, and a sign-in of another user closes it (4403, as the
   * service would at the next renewal): until then the socket, still authenticated for the user
   * who left, would hand their events to the app. Before the first `ready`, a socket opened with
   * the tokens of the user who left starts again with the new ones.
   */
  private accountChanged(tokens: Tokens | null): void {
    if (this.stopped) return;
    this.accountChanges += 1;
    if (tokens === null) return this.finish({ status: 'signed_out' });
    const user = accountOf(tokens);
    if (user === undefined) return; // not a JWT: nothing to compare
    if (this.userId !== undefined && user !== this.userId)
      return this.finish({
        status: 'closed',
        closeCode: ChatCloseCodes.wrongUser,
        reason: 'another user signed in',
      });
    const socket = this.socket;
    if (this.userId === undefined && socket !== undefined && this.tokens !== undefined) {
      if (accountOf(this.tokens) !== user) this.drop(socket, 'another user signed in');
    }
  }

  /** Gives up on a socket that is still open: closes it and goes on as if the server had. */
  private drop(socket: WebSocket, reason: string): void {
    if (socket !== this.socket) return;
    this.closed(socket, ChatCloseCodes.noAnswer, reason);
    socket.close(ChatCloseCodes.noAnswer, reason);
  }

  private closed(socket: WebSocket, code: number, reason: string): void {
    if (socket !== this.socket) return;
    const refused = this.tokens;
    this.detach();
    if (this.stopped) return;
    const verdict = closeVerdict(code);
    if (verdict === 'stop') return this.finish({ status: 'closed', closeCode: code, reason });
    if (verdict === 'renew') {
      if (refused !== undefined) return void this.renewThenRetry(refused, code);
      return this.retry(code);
    }
    this.retry(code, verdict);
  }

  /** 4401: the token expired or the session ended. A refused refresh means the latter: stop. */
  private async renewThenRetry(refused: Tokens, code: number): Promise<void> {
    // Not open while the token is renewed (up to the refresh's 9 s): reconnecting once it is.
    this.setState({
      status: 'reconnecting',
      attempt: this.backoff.attempt,
      inMs: 0,
      closeCode: code,
    });
    if (this.stopped) return; // a listener closed the connection
    let renewed: Tokens | null;
    try {
      renewed = await this.deps.renew(refused);
    } catch (error) {
      if (this.stopped) return;
      this.listeners.emit('error', error);
      this.waitAtLeast(error);
      renewed = refused; // the refresh itself failed: try again later, as after any close
    }
    if (this.stopped) return;
    if (renewed === null) return this.finish({ status: 'signed_out' });
    this.retry(code);
  }

  private retry(
    closeCode: number | undefined,
    kind: 'reconnect' | 'spread' | 'wait' = 'reconnect',
  ): void {
    const attempt = this.backoff.attempt;
    const inMs = Math.max(this.backoff.next(kind), this.waitAtLeastMs);
    this.waitAtLeastMs = 0;
    this.setState({ status: 'reconnecting', attempt, inMs, closeCode });
    if (this.stopped) return; // a listener closed the connection: no timer outlives it
    this.reconnectTimer = setTimeout(() => void this.open(), inMs);
  }

  /**
   * A 429 or 503 that said how long to wait (`Retry-After`): the next attempt waits that long, up
   * to 5 minutes (a proxy's advice of hours would leave the chat silent that long).
   */
  private waitAtLeast(error: unknown): void {
    this.waitAtLeastMs = retryAfterMs(error);
  }

  private renewalOf(tokens: Tokens): Renewal {
    const hooks = {
      tokens: this.deps.tokens,
      now: this.deps.now,
      renewed: (fresh: Tokens) => {
        if (fresh.accessToken !== this.tokens?.accessToken) this.send(authFrame(fresh.accessToken));
        this.tokens = fresh;
      },
      signedOut: () => this.finish({ status: 'signed_out' }),
      failed: (error: unknown) => this.listeners.emit('error', error),
    };
    return new Renewal(hooks, tokens);
  }

  private send(frame: string): void {
    if (this.socket?.readyState === OPEN) this.socket.send(frame);
  }

  /** Forgets the socket and its timers (the socket has closed, or is being closed). */
  private detach(): void {
    this.backoff.closedAfter(this.syncedAt === undefined ? undefined : Date.now() - this.syncedAt);
    this.syncedAt = undefined;
    this.socket = undefined;
    this.socketScope?.abort();
    this.socketScope = undefined;
    this.liveness?.stop();
    this.liveness = undefined;
    clearTimeout(this.readyTimer);
    this.renewal?.stop();
    this.renewal = undefined;
  }

  /** Stops for good: closes the socket if open, cancels every timer. */
  private finish(state: ChatState): void {
    if (this.stopped) return;
    this.stopped = true;
    this.unwatch();
    const socket = this.socket;
    this.detach();
    clearTimeout(this.reconnectTimer);
    if (socket !== undefined && socket.readyState <= OPEN) socket.close(ChatCloseCodes.normal);
    this.setState(state);
  }

  private setState(state: ChatState): void {
    this.current = state;
    this.listeners.emit('state', state);
  }
}

function backoffPolicy(policy: BackoffPolicy = {}): Required<BackoffPolicy> {
  return {
    baseMs: policy.baseMs ?? DEFAULT_BACKOFF.baseMs,
    capMs: policy.capMs ?? DEFAULT_BACKOFF.capMs,
    stableAfterMs: policy.stableAfterMs ?? DEFAULT_BACKOFF.stableAfterMs,
  };
}
