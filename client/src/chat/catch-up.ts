import type {
  ChangesPage,
  ChatEvent,
  ChatMessage,
  ChatMessageEvent,
  Conversation,
  ConversationReadEvent,
  UnreadCounts,
} from './events.js';
import type { MessageFrame, ServerFrame } from './frames.js';

/**
 * Where catching up reads from: the service's HTTP API, the source of truth. `socket`, aborted
 * once the socket the catch-up is for is gone: a request may stop then (its answer is not used).
 */
export interface ChatHistory {
  /**
   * One page of `GET /api/chat/conversations/{id}/changes?since_version=…`; `null` when the
   * conversation does not exist for the caller (`404`).
   */
  changes(
    conversationId: string,
    sinceVersion: number,
    socket?: AbortSignal,
  ): Promise<ChangesPage | null>;
  /** The first page of `GET /api/chat/conversations`, and `GET /api/chat/unread`. */
  overview(socket?: AbortSignal): Promise<ChatOverview>;
  /** The page of `GET /api/chat/conversations` at `cursor`, as long as pages may be. */
  more?(
    cursor: string,
    socket?: AbortSignal,
  ): Promise<Pick<ChatOverview, 'conversations' | 'next_cursor'>>;
}

/** The signal of a socket that is never dropped (frames handed over by hand, or a test). */
const LIVE = new AbortController().signal;

export interface ChatOverview {
  readonly conversations: readonly Conversation[];
  readonly next_cursor: string | null;
  readonly unread: UnreadCounts;
}

/** Conversations caught up at once after a (re)connection: a few requests in flight, not hundreds. */
const PARALLEL_CATCH_UPS = 4;
/**
 * Pages of the list read after the first while tracked conversations are not on it: a page tells
 * the versions of up to 100 at once, where each conversation's `changes` would be a request.
 */
const MORE_PAGES = 5;

/**
 * API.md's catch-up rule, apart from any socket: it keeps the last applied `version` of each
 * conversation; drops an event at or below it, applies the next one, and on a gap pages `changes`
 * from it until `has_more` is false; after `ready` and `resync_required` it reads the conversation
 * list and catches up each tracked conversation whose version moved (or that the first page does
 * not show). Frames are handled one at a time, in arrival order, so what `deliver` gets is in
 * `version` order per conversation, each change once.
 *
 * A conversation it has no version for is tracked from its first event on (a conversation started
 * meanwhile, or one the app never loaded); `track` gives it the version of what the app loaded.
 */
export class ChatCatchUp {
  private readonly versions = new Map<string, number>();
  /** The highest read position handed over per conversation (see `read`). */
  private readonly readUpTo = new Map<string, number>();
  private readonly history: ChatHistory;
  private readonly deliver: (event: ChatEvent) => void;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    history: ChatHistory,
    deliver: (event: ChatEvent) => void,
    versions: Iterable<readonly [string, number]> = [],
  ) {
    this.history = history;
    this.deliver = deliver;
    for (const [id, version] of versions) this.track(id, version);
  }

  /** The last version applied in the conversation, or undefined when it is not tracked. */
  version(conversationId: string): number | undefined {
    return this.versions.get(conversationId);
  }

  /** The app has the conversation up to `version` (never moves a version back). */
  track(conversationId: string, version: number): void {
    const own = this.versions.get(conversationId);
    if (own === undefined || version > own) this.versions.set(conversationId, version);
  }

  forget(conversationId: string): void {
    this.versions.delete(conversationId);
    this.readUpTo.delete(conversationId);
  }

  /**
   * Handles `frame` once every frame received before it is handled. Rejects when catching up
   * failed (the HTTP call did): the caller reconnects, and the resync after `ready` repairs it.
   * `socket`: aborted once the socket the frame came on is no longer the connection's; a frame of
   * one dropped meanwhile is skipped (each with a gap would start a catch-up of its own before the
   * new socket's resync, which repairs everything anyway), and its requests under way are
   * cancelled, so the new socket's frames do not wait for them.
   */
  receive(frame: ServerFrame, socket: AbortSignal = LIVE): Promise<void> {
    const current = () => !socket.aborted;
    const handled = this.queue.then(() =>
      current() ? this.handle(frame, current, socket) : undefined,
    );
    this.queue = handled.catch(() => undefined);
    return handled;
  }

  /** Resolves once every frame received so far has been handled. */
  settled(): Promise<void> {
    return this.queue;
  }

  /** `current` is asked again before each request: a closed connection reads nothing more. */
  private async handle(
    frame: ServerFrame,
    current: () => boolean,
    socket: AbortSignal,
  ): Promise<void> {
    switch (frame.type) {
      case 'ready':
      case 'resync_required':
        return this.resync(current, socket);
      case 'message.created':
      case 'message.updated':
      case 'message.deleted':
        return this.apply(frame, current, socket);
      case 'conversation.read':
        return this.read(frame);
      case 'typing':
        return this.deliver(frame);
      case 'pong':
        return;
    }
  }

  private async apply(
    frame: MessageFrame,
    current: () => boolean,
    socket: AbortSignal,
  ): Promise<void> {
    const { type, conversation_id: id, version, chat_message } = frame;
    const own = this.versions.get(id);
    if (own !== undefined && version <= own) return; // applied already
    if (own !== undefined && version > own + 1) return this.catchUp(id, current, socket); // missed some
    this.versions.set(id, version);
    this.deliver({ type, conversation_id: id, version, chat_message, source: 'socket' });
  }

  /**
   * A read position never moves back, but two reads (two devices) committed a moment apart can
   * reach the socket swapped (through two instances, or one before a reconnect and one after):
   * the older one, and its unread count, must not be the last the app hears. An equal one is
   * handed over (its unread count may be newer: a message deleted since).
   */
  private read(frame: ConversationReadEvent): void {
    const known = this.readUpTo.get(frame.conversation_id);
    if (known !== undefined && frame.last_read_seq < known) return;
    this.readUpTo.set(frame.conversation_id, frame.last_read_seq);
    this.deliver(frame);
  }

  /** Pages `changes` from the conversation's version until `has_more` is false. */
  private async catchUp(id: string, current: () => boolean, socket: AbortSignal): Promise<void> {
    for (;;) {
      const since = this.versions.get(id);
      if (since === undefined || !current()) return; // forgotten, or closed, meanwhile
      const page = await this.history.changes(id, since, socket);
      if (!this.versions.has(id) || !current()) return; // forgotten, or closed, during the read
      if (page === null) return this.forget(id);
      for (const message of page.messages) this.applyChange(id, message);
      this.track(id, page.version);
      if (!page.has_more) return;
      if (page.version <= since) throw new Error(`changes of ${id} did not move past ${since}`);
    }
  }

  private applyChange(id: string, message: ChatMessage): void {
    const own = this.versions.get(id);
    if (own === undefined || message.version <= own) return;
    this.versions.set(id, message.version);
    this.deliver(changeEvent(id, message));
  }

  private async resync(current: () => boolean, socket: AbortSignal): Promise<void> {
    const overview = await this.history.overview(socket);
    if (!current()) return;
    const listed = await this.listedVersions(overview, current, socket);
    // Moved, or not on the pages read (asking its `changes` tells as much as finding it would).
    const moved = [...this.versions].filter(([id, own]) => (listed.get(id) ?? Infinity) > own);
    const ids = moved.map(([id]) => id);
    const caughtUp = ids.length > 0;
    const worker = async () => {
      for (let id = ids.shift(); id !== undefined; id = ids.shift())
        await this.catchUp(id, current, socket);
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_CATCH_UPS, ids.length) }, worker));
    if (!current()) return;
    // The list and counts as they are now: the events just handed over may be newer than the
    // first reading, and `sync` must not take the app back behind them.
    const { conversations, next_cursor, unread } = caughtUp
      ? await this.history.overview(socket)
      : overview;
    this.deliver({ type: 'sync', conversations, next_cursor, unread });
  }

  /** The versions the list shows: its first page, then more while tracked ones are not on it. */
  private async listedVersions(
    overview: ChatOverview,
    current: () => boolean,
    socket: AbortSignal,
  ): Promise<Map<string, number>> {
    const listed = new Map(overview.conversations.map((c) => [c.id, c.version]));
    const unseen = () => [...this.versions.keys()].some((id) => !listed.has(id));
    let cursor = overview.next_cursor;
    for (let pages = 0; cursor !== null && pages < MORE_PAGES && unseen() && current(); pages++) {
      if (this.history.more === undefined) break;
      const page = await this.history.more(cursor, socket);
      for (const c of page.conversations) listed.set(c.id, c.version);
      cursor = page.next_cursor;
    }
    return listed;
  }
}

/** A message read from `changes` as an event; its type inferred from its current state. */
function changeEvent(conversationId: string, message: ChatMessage): ChatMessageEvent {
  const type = message.deleted
    ? 'message.deleted'
    : message.edited_at !== null
      ? 'message.updated'
      : 'message.created';
  return {
    type,
    conversation_id: conversationId,
    version: message.version,
    chat_message: message,
    source: 'changes',
  };
}
