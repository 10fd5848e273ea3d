import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Why a chat socket closed: the `reason` label of `chat_sockets_closed_total`. */
export type SocketCloseReason =
  | 'unauthorized'
  | 'token_expired'
  | 'session_ended'
  | 'auth_timeout'
  | 'wrong_user'
  | 'too_many_sockets'
  | 'too_many_awaiting_auth'
  | 'slow_reader'
  | 'shutdown'
  | 'heartbeat_timeout'
  | 'frame_too_big'
  | 'protocol_error'
  | 'unavailable'
  | 'client';

/**
 * What became of a `typing` frame: relayed to the peer, dropped as one within 3 s of the last,
 * refused (not a member, no peer, a block), or dropped while the socket's previous one was
 * still being checked.
 */
export type TypingOutcome = 'relayed' | 'throttled' | 'refused' | 'busy' | 'failed';

/** The chat socket's metrics, in the app's registry (operations/metrics.ts). */
export class RealtimeMetrics {
  private readonly open: Gauge;
  private readonly published: Counter<'type'>;
  private readonly delivered: Counter<'type'>;
  private readonly latency: Histogram;
  private readonly closed: Counter<'reason'>;
  private readonly typingFrames: Counter<'outcome'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.open = new Gauge({
      name: 'chat_sockets_open',
      help: 'Chat WebSockets open on this instance (authenticated or not yet).',
      registers,
    });
    this.published = new Counter({
      name: 'chat_events_published_total',
      help: 'Events handed to the event bus, one per recipient channel, by type.',
      labelNames: ['type'],
      registers,
    });
    this.delivered = new Counter({
      name: 'chat_events_delivered_total',
      help: 'Events written to a chat socket, one per socket, by type.',
      labelNames: ['type'],
      registers,
    });
    this.latency = new Histogram({
      name: 'chat_delivery_latency_seconds',
      help: "From an event's publication (after its commit) to its write on a socket.",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.typingFrames = new Counter({
      name: 'chat_typing_frames_total',
      help: 'Typing frames from clients, by outcome (relayed, throttled, refused, busy, failed).',
      labelNames: ['outcome'],
      registers,
    });
    this.closed = new Counter({
      name: 'chat_sockets_closed_total',
      help: 'Chat WebSockets closed, by reason.',
      labelNames: ['reason'],
      registers,
    });
  }

  typing(outcome: TypingOutcome): void {
    this.typingFrames.inc({ outcome });
  }

  eventPublished(type: string, recipients: number): void {
    this.published.inc({ type }, recipients);
  }

  /** One event written to one socket, `seconds` after it was published. */
  eventDelivered(type: string, seconds: number): void {
    this.delivered.inc({ type });
    this.latency.observe(Math.max(0, seconds));
  }

  socketOpened(): void {
    this.open.inc();
  }

  socketClosed(reason: SocketCloseReason): void {
    this.open.dec();
    this.closed.inc({ reason });
  }
}
