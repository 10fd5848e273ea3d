import type { Delivery, EventBus } from '../../events/bus.js';
import type { ChatSocket } from './chat-socket.js';
import { VersionOrder } from './ordering.js';
import { MAX_SOCKETS_PER_USER } from './socket-limits.js';
import { instanceSeats, type SocketSeats } from './socket-seats.js';

/** Writes one delivery (an event for one user) to that user's sockets on this instance. */
export type SocketDelivery = (delivery: Delivery, sockets: ReadonlySet<ChatSocket>) => void;

interface UserSockets {
  readonly sockets: Set<ChatSocket>;
  readonly order: VersionOrder;
  /** Resolves to the unsubscribe function once the user's events reach this instance. */
  readonly subscription: Promise<() => void>;
}

/**
 * The sockets this instance holds, all of them and by user. A user's first socket subscribes this
 * instance to the user's events (one bus listener per user, whatever their socket count), put back
 * in version order per conversation (ordering.ts); the last one to close unsubscribes. Each
 * authenticated socket holds a seat among its user's on every instance (socket-seats.ts).
 */
export class SocketRegistry {
  private readonly all = new Set<ChatSocket>();
  private readonly byUser = new Map<string, UserSockets>();

  constructor(
    private readonly bus: EventBus,
    private readonly deliver: SocketDelivery,
    private readonly seating: SocketSeats = instanceSeats,
  ) {}

  get size(): number {
    return this.all.size;
  }

  sockets(): IterableIterator<ChatSocket> {
    return this.all.values();
  }

  /** A new socket, not authenticated yet. */
  add(socket: ChatSocket): void {
    this.all.add(socket);
  }

  /**
   * Counts an authenticated socket among its user's; answers false for one over the limit (or
   * not authenticated). Resolves once events published from now on reach the user's sockets here.
   */
  async attach(socket: ChatSocket): Promise<boolean> {
    const { userId } = socket;
    if (userId === undefined) return false;
    let user = this.byUser.get(userId);
    if (user === undefined) {
      const sockets = new Set<ChatSocket>();
      const order = new VersionOrder((delivery) => this.deliver(delivery, sockets));
      const subscription = this.bus.subscribe(userId, (delivery) => order.accept(delivery));
      user = { sockets, order, subscription };
      this.byUser.set(userId, user);
    }
    if (openCount(user.sockets) >= MAX_SOCKETS_PER_USER) return false;
    // Counted here before anything is awaited: two sockets of one user on this instance
    // cannot both take its last place.
    user.sockets.add(socket);
    const [seat] = await Promise.all([this.seating.take(userId), user.subscription]);
    if (seat === undefined) {
      this.detach(userId, socket);
      return false;
    }
    // Closed, or closing, while its seat was being taken (removed or not yet): it holds no seat.
    if (!socket.isOpen) {
      await seat.release();
      return false;
    }
    socket.seat = seat;
    return true;
  }

  /** A closed socket; its user's last one ends this instance's subscription to the user. */
  remove(socket: ChatSocket): void {
    this.all.delete(socket);
    if (socket.userId === undefined) return;
    void socket.releaseSeat();
    this.detach(socket.userId, socket);
  }

  /**
   * Shutdown: every seat given back before the sockets are told to reconnect elsewhere, where
   * their seats must be free to take.
   */
  async releaseSeats(): Promise<void> {
    await Promise.all([...this.all].map((socket) => socket.releaseSeat()));
  }

  private detach(userId: string, socket: ChatSocket): void {
    const user = this.byUser.get(userId);
    if (user === undefined || !user.sockets.delete(socket) || user.sockets.size > 0) return;
    this.byUser.delete(userId);
    user.order.dispose();
    void user.subscription.then((unsubscribe) => unsubscribe());
  }
}

/**
 * The sockets that count against the cap: one the server has closed stays listed until the client
 * answers its close frame (ws waits up to 30 s), and must not keep its user's new one out.
 */
function openCount(sockets: ReadonlySet<ChatSocket>): number {
  let open = 0;
  for (const socket of sockets) if (socket.isOpen) open += 1;
  return open;
}
