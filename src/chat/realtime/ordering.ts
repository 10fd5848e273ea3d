import type { Delivery } from '../../events/bus.js';
import { LeastRecentlyUsed } from '../../least-recently-used.js';

/** How long an event waits for the versions before it, when they have not arrived yet. */
export const REORDER_WAIT_MS = 100;
/** Conversations whose last version is remembered, per user: the least recently active go. */
const REMEMBERED_CONVERSATIONS = 512;
/** Events held for one conversation at most; past it, they go out as they are. */
const MAX_HELD = 64;

interface ConversationState {
  delivered: number;
  readonly held: Map<number, Delivery>;
  timer?: NodeJS.Timeout;
}

/**
 * Puts one user's message events back in `version` order per conversation before they reach the
 * sockets. Transactions of one conversation commit in version order, but their events are
 * published from separate connections, maybe separate instances, so two that commit a moment apart
 * can arrive swapped. An event one past the last delivered goes out at once; a later one waits up
 * to REORDER_WAIT_MS for the gap to fill, then goes out anyway (the client pages `changes`); one
 * at or below the last delivered was overtaken and is dropped (every socket of the user has
 * already been sent a newer version, or refetched after it committed). A read that an earlier
 * one overtook is dropped too. Other events pass through.
 */
export class VersionOrder {
  private readonly conversations = new Map<string, ConversationState>();
  /** The last read position delivered per conversation (see `acceptRead`). */
  private readonly readUpTo = new LeastRecentlyUsed<string, number>(REMEMBERED_CONVERSATIONS);

  constructor(private readonly deliver: (delivery: Delivery) => void) {}

  accept(delivery: Delivery): void {
    const {
      type,
      conversation_id: conversationId,
      version,
      last_read_seq: readSeq,
    } = delivery.event;
    const isRead = type === 'conversation.read' && typeof readSeq === 'number';
    if (isRead && typeof conversationId === 'string') {
      return this.acceptRead(conversationId, readSeq, delivery);
    }
    if (typeof version !== 'number' || typeof conversationId !== 'string') {
      return this.deliver(delivery);
    }
    const state = this.stateOf(conversationId);
    if (state === undefined) {
      this.remember(conversationId, { delivered: version, held: new Map() });
      return this.deliver(delivery);
    }
    if (version <= state.delivered) return;
    state.held.set(version, delivery);
    this.flushConsecutive(state);
    if (state.held.size > MAX_HELD) return this.flushAll(state);
    if (state.held.size > 0) state.timer ??= this.wait(state);
  }

  /** The user's last socket here closed: nothing more goes out. */
  dispose(): void {
    for (const state of this.conversations.values()) clearTimeout(state.timer);
    this.conversations.clear();
    this.readUpTo.clear();
  }

  /**
   * A read position never moves back, but two reads (two devices) committed a moment apart on two
   * instances can arrive swapped: the older one, and its unread count, would then be the last a
   * socket heard. Dropped once a later read of the conversation went out; an equal one goes out
   * (its unread count may be newer: a message deleted since).
   */
  private acceptRead(conversationId: string, readSeq: number, delivery: Delivery): void {
    const known = this.readUpTo.peek(conversationId);
    if (known !== undefined && readSeq < known) return;
    this.readUpTo.set(conversationId, readSeq); // the most recently read kept longest
    this.deliver(delivery);
  }

  private stateOf(conversationId: string): ConversationState | undefined {
    const state = this.conversations.get(conversationId);
    if (state === undefined) return undefined;
    this.conversations.delete(conversationId); // most recently active last
    this.conversations.set(conversationId, state);
    return state;
  }

  private remember(conversationId: string, state: ConversationState): void {
    this.conversations.set(conversationId, state);
    if (this.conversations.size <= REMEMBERED_CONVERSATIONS) return;
    const [oldestId, oldest] = this.conversations.entries().next().value as [
      string,
      ConversationState,
    ];
    this.flushAll(oldest);
    this.conversations.delete(oldestId);
  }

  private flushConsecutive(state: ConversationState): void {
    for (let next = state.held.get(state.delivered + 1); next !== undefined;) {
      state.held.delete(state.delivered + 1);
      state.delivered += 1;
      this.deliver(next);
      next = state.held.get(state.delivered + 1);
    }
    if (state.held.size === 0 && state.timer !== undefined) {
      clearTimeout(state.timer);
      state.timer = undefined;
    }
  }

  private flushAll(state: ConversationState): void {
    clearTimeout(state.timer);
    state.timer = undefined;
    for (const version of [...state.held.keys()].sort((a, b) => a - b)) {
      const delivery = state.held.get(version) as Delivery;
      state.held.delete(version);
      state.delivered = version;
      this.deliver(delivery);
    }
  }

  private wait(state: ConversationState): NodeJS.Timeout {
    const timer = setTimeout(() => this.flushAll(state), REORDER_WAIT_MS);
    timer.unref();
    return timer;
  }
}
