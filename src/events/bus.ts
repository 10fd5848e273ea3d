/**
 * Events for users, e.g. a chat message for both members of its conversation. A group publishes
 * after its transaction commits; whoever holds a user's sockets subscribes to that user. Without
 * Redis this stays inside one process (memory-bus.ts); with it, every instance sees every event
 * for the users it holds (redis-bus.ts).
 */

/** Any JSON object with a `type`; the publishing group defines the shapes. */
export interface BusEvent {
  readonly type: string;
  /**
   * Safe to act on twice (an internal event, e.g. a session that ended): also delivered on the
   * publishing instance at once, so that a Redis that hangs cannot keep it from this instance's
   * own listeners. Never set on an event a client sees (API.md: never duplicated).
   */
  readonly here_too?: true;
  readonly [field: string]: unknown;
}

export interface Delivery {
  readonly userId: string;
  readonly event: BusEvent;
  /** When it was published (ms since the epoch): for the commit-to-socket latency metric. */
  readonly publishedAt: number;
}

export type DeliveryListener = (delivery: Delivery) => void;

export interface EventBus {
  /**
   * Hands `event` to each user's channel. Call only after the change it reports has committed.
   * Never throws and never waits on the network: events of one caller keep their order, and an
   * event that cannot travel is lost (clients repair gaps from HTTP; see API.md's catch-up rule).
   */
  publish(userIds: readonly string[], event: BusEvent): void;
  /**
   * Receives one user's events on this instance until the returned function is called. Resolves
   * once events published from now on will arrive (or after a short wait if Redis is away: the
   * subscription then completes when it returns, followed by a resync).
   */
  subscribe(userId: string, listener: DeliveryListener): Promise<() => void>;
  /** Called when events may have been lost (e.g. a Redis subscription came back). */
  onResync(listener: () => void): () => void;
  close(): Promise<void>;
}

/** The per-user listener sets both buses keep. */
export class Subscribers {
  private readonly byUser = new Map<string, Set<DeliveryListener>>();

  /** Adds a listener; answers whether it is the user's first on this instance. */
  add(userId: string, listener: DeliveryListener): boolean {
    const listeners = this.byUser.get(userId);
    if (listeners !== undefined) {
      listeners.add(listener);
      return false;
    }
    this.byUser.set(userId, new Set([listener]));
    return true;
  }

  /** Removes a listener; answers whether it was the user's last on this instance. */
  remove(userId: string, listener: DeliveryListener): boolean {
    const listeners = this.byUser.get(userId);
    if (listeners === undefined || !listeners.delete(listener)) return false;
    if (listeners.size > 0) return false;
    this.byUser.delete(userId);
    return true;
  }

  deliver(delivery: Delivery, onError: (error: unknown) => void): void {
    for (const listener of this.byUser.get(delivery.userId) ?? []) {
      try {
        listener(delivery);
      } catch (error) {
        onError(error); // one broken listener must not starve the others
      }
    }
  }

  users(): IterableIterator<string> {
    return this.byUser.keys();
  }
}
