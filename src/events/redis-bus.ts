import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import {
  reconnectWhenSilent,
  reportConnectionErrors,
  SILENCE_CHECK,
  whenReady,
  type RedisOptions,
} from '../redis.js';
import { Subscribers, type BusEvent, type DeliveryListener, type EventBus } from './bus.js';

/** A user's channel is `<REDIS_PREFIX>events:user:<user id>`. */
const CHANNEL_PREFIX = 'events:user:';
/** Every instance listens here (after REDIS_PREFIX): "events were lost, tell your sockets to resync". */
const RESYNC_CHANNEL = 'events:resync';
/** How often an instance that lost a publish tries to say so, until Redis takes it. */
const RESYNC_RETRY_MS = 250;
/**
 * A resync waits this long for other reasons to resync (after an outage: this instance's
 * subscription coming back, and every instance that lost a publish saying so), so that sockets
 * are told once rather than once per instance; and comes at most once per RESYNC_MIN_INTERVAL_MS
 * (a reason meanwhile is told at its end), so a flapping Redis cannot have every client refetch
 * every second.
 */
const RESYNC_GATHER_MS = 500;
const RESYNC_MIN_INTERVAL_MS = 5_000;
const SUBSCRIBE_WAIT_MS = 1_000;
const LATE = Symbol('late');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

interface WireMessage {
  readonly t: number;
  readonly e: BusEvent;
}

function isWireMessage(value: unknown): value is WireMessage {
  if (typeof value !== 'object' || value === null) return false;
  const { t, e } = value as Record<string, unknown>;
  return (
    typeof t === 'number' &&
    typeof e === 'object' &&
    e !== null &&
    typeof (e as Record<string, unknown>).type === 'string'
  );
}

/** One PUBLISH of a pipeline: an event for one user's channel. */
interface Send {
  readonly userId: string;
  readonly message: WireMessage;
  readonly text: string;
}

/**
 * Refused before it was written (the connection is down: no offline queue), or answered with an
 * error by Redis: either way nobody received it.
 */
function neverReachedRedis(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.name === 'ReplyError' || error.message.startsWith("Stream isn't writeable");
}

/**
 * Several instances: an event goes out on a Redis channel per user, and each instance subscribes
 * (on a dedicated connection) to the channels of the users whose sockets it holds, so no sticky
 * sessions are needed. While Redis cannot take a publish, events reach this instance's own
 * listeners only, and once Redis takes publishes again every instance's resync listeners hear of
 * the gap (RESYNC_CHANNEL); an instance whose own subscription comes back hears of it too.
 */
export class RedisEventBus implements EventBus {
  private readonly subscribers = new Subscribers();
  private readonly resyncListeners = new Set<() => void>();
  private readonly pendingSubscriptions = new Map<string, Promise<unknown>>();
  private publishFailing = false;
  /** Published in this task, not yet handed to Redis (see `publish`). */
  private readonly unsent: { userIds: readonly string[]; message: WireMessage; text: string }[] =
    [];
  private subscriptionLost = false;
  /** Set while a lost publish is owed to every instance as a resync (see `oweResync`). */
  private resyncTimer: NodeJS.Timeout | undefined;
  /** A resync gathering its reasons (see RESYNC_GATHER_MS). */
  private gathering: NodeJS.Timeout | undefined;
  private lastResyncAt = -Infinity;
  private closed = false;

  /** This deployment's channels: REDIS_PREFIX lets several share one Redis. */
  private readonly userChannels: string;
  private readonly resyncChannel: string;

  private constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly log: FastifyBaseLogger,
    private readonly clock: () => number,
    prefix: string,
  ) {
    this.userChannels = `${prefix}${CHANNEL_PREFIX}`;
    this.resyncChannel = `${prefix}${RESYNC_CHANNEL}`;
    subscriber.on('message', (channel: string, message: string) => this.receive(channel, message));
    subscriber.on('close', () => {
      this.subscriptionLost = true;
    });
    subscriber.on('ready', () => {
      if (!this.subscriptionLost) return;
      this.subscriptionLost = false;
      // ioredis has re-sent our SUBSCRIBEs; whatever was published meanwhile is gone.
      this.resync('event subscription restored: asking clients to resync');
    });
  }

  private channelOf(userId: string): string {
    return `${this.userChannels}${userId}`;
  }

  /** Waits (up to 2 s) for both connections, so the first publish reaches every instance. */
  static async connect(
    url: string,
    log: FastifyBaseLogger,
    clock: () => number = Date.now,
    { silenceCheck = SILENCE_CHECK, prefix = '' }: RedisOptions = {},
  ) {
    const publisher = new Redis(url, {
      enableOfflineQueue: false, // fail at once while disconnected: deliver locally instead
      maxRetriesPerRequest: 1,
      commandTimeout: 500,
      // A publish that timed out is settled as possibly published (see settle): sent again after
      // a reconnection, it could arrive twice, which API.md forbids.
      autoResendUnfulfilledCommands: false,
    });
    const subscriber = new Redis(url, { autoResubscribe: true, maxRetriesPerRequest: null });
    // Once each until ready again, not once per reconnect attempt; the publish path and the
    // resync log say what it meant for the events.
    reportConnectionErrors(publisher, log, 'chat events (publish)');
    reportConnectionErrors(subscriber, log, 'chat events (subscribe)');
    reconnectWhenSilent(publisher, log, 'chat events (publish)', silenceCheck);
    reconnectWhenSilent(subscriber, log, 'chat events (subscribe)', silenceCheck);
    await whenReady([publisher, subscriber]);
    // Re-sent by ioredis after every reconnection; not waited for longer than a user's channel
    // (while Redis is away it stays queued, and the service starts degraded).
    const resyncs = subscriber.subscribe(`${prefix}${RESYNC_CHANNEL}`).catch(() => undefined);
    await Promise.race([resyncs, sleep(SUBSCRIBE_WAIT_MS)]);
    return new RedisEventBus(publisher, subscriber, log, clock, prefix);
  }

  /**
   * Hands the event to Redis with every other publish of this moment (the rest of the current
   * task): a chat message's event for both members, or the events of sends that committed
   * together, leave in one pipeline, one write, in the order they were published.
   */
  publish(userIds: readonly string[], event: BusEvent): void {
    const message: WireMessage = { t: this.clock(), e: event };
    if (event.here_too === true) for (const userId of userIds) this.deliver(userId, message);
    if (this.unsent.length === 0) queueMicrotask(() => this.sendUnsent());
    this.unsent.push({ userIds, message, text: JSON.stringify(message) });
  }

  private sendUnsent(): void {
    const sends = this.unsent
      .splice(0)
      .flatMap(({ userIds, message, text }) =>
        userIds.map((userId) => ({ userId, message, text })),
      );
    const pipeline = this.publisher.pipeline();
    for (const { userId, text } of sends) pipeline.publish(this.channelOf(userId), text);
    pipeline.exec().then(
      (results) => this.settle(sends, results?.map(([error]) => error) ?? []),
      (error: unknown) =>
        this.settle(
          sends,
          sends.map(() => error),
        ),
    );
  }

  /**
   * A publish that certainly did not reach Redis goes to this instance's own sockets instead. One
   * that may have reached it (a timeout, a connection lost after the write) is left: Redis may
   * still publish it, and API.md allows an event to be lost, never to arrive twice.
   */
  private settle(sends: readonly Send[], errors: readonly unknown[]): void {
    const failure = errors.find((error) => error !== null && error !== undefined);
    if (failure === undefined) {
      if (this.publishFailing) {
        this.publishFailing = false;
        this.log.info('Redis takes events again: they reach every instance');
      }
      return;
    }
    if (!this.publishFailing) {
      this.publishFailing = true;
      this.log.warn(
        { err: failure },
        "Redis cannot take events: they reach this instance's sockets only",
      );
    }
    sends.forEach(({ userId, message }, i) => {
      if (neverReachedRedis(errors[i])) this.deliver(userId, message);
    });
    this.oweResync();
  }

  /**
   * Other instances missed the events that failed (and this one those that may have reached
   * Redis but were lost): once Redis takes a publish again, every instance is told to resync
   * its sockets, which refetch and have their sessions checked (a lost `session.revoked` would
   * otherwise leave a socket open until its token expires).
   */
  private oweResync(): void {
    if (this.resyncTimer !== undefined || this.closed) return;
    const attempt = () => {
      this.publisher.publish(this.resyncChannel, '').then(
        () => {
          clearInterval(this.resyncTimer);
          this.resyncTimer = undefined;
        },
        () => undefined, // still away: the next attempt
      );
    };
    this.resyncTimer = setInterval(attempt, RESYNC_RETRY_MS);
    this.resyncTimer.unref();
  }

  private resync(reason: string): void {
    if (this.closed) return;
    this.log.info(reason);
    if (this.gathering !== undefined) return;
    const sinceLast = Date.now() - this.lastResyncAt;
    const wait = Math.max(RESYNC_GATHER_MS, RESYNC_MIN_INTERVAL_MS - sinceLast);
    this.gathering = setTimeout(() => {
      this.gathering = undefined;
      this.lastResyncAt = Date.now();
      for (const listener of this.resyncListeners) listener();
    }, wait);
    this.gathering.unref();
  }

  async subscribe(userId: string, listener: DeliveryListener): Promise<() => void> {
    if (this.subscribers.add(userId, listener)) {
      const subscribed = this.subscriber.subscribe(this.channelOf(userId)).catch(() => undefined);
      this.pendingSubscriptions.set(userId, subscribed);
      void subscribed.then(() => this.pendingSubscriptions.delete(userId));
    }
    // Queued while Redis is away, or slow: the caller is not held longer than this, and its
    // sockets, ready meanwhile, may miss what is published before the subscription takes hold.
    const pending = this.pendingSubscriptions.get(userId);
    const late = await Promise.race([pending, sleep(SUBSCRIBE_WAIT_MS).then(() => LATE)]);
    if (late === LATE)
      void pending?.then(() =>
        this.resync('a subscription took hold late: asking clients to resync'),
      );
    return () => {
      if (this.subscribers.remove(userId, listener)) {
        this.subscriber.unsubscribe(this.channelOf(userId)).catch(() => undefined);
      }
    };
  }

  onResync(listener: () => void): () => void {
    this.resyncListeners.add(listener);
    return () => void this.resyncListeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.resyncTimer);
    clearTimeout(this.gathering);
    this.subscriber.disconnect();
    this.publisher.disconnect();
  }

  private receive(channel: string, text: string): void {
    if (channel === this.resyncChannel)
      return this.resync('an instance lost event publishes: asking clients to resync');
    if (!channel.startsWith(this.userChannels)) return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return; // not ours
    }
    // Anything another client of a shared Redis publishes reaches here: only our shape goes on
    // (a bare `null` thrown in the listener would end the process).
    if (!isWireMessage(message)) return;
    this.deliver(channel.slice(this.userChannels.length), message);
  }

  private deliver(userId: string, message: WireMessage): void {
    this.subscribers.deliver({ userId, event: message.e, publishedAt: message.t }, (error) =>
      this.log.error({ err: error }, 'an event listener failed'),
    );
  }
}
