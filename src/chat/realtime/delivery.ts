import type { Delivery } from '../../events/bus.js';
import { endsSession } from '../../events/account-events.js';
import type { RealtimeMetrics } from '../../operations/realtime-metrics.js';
import type { ChatSocket } from './chat-socket.js';
import { Closures } from './close-codes.js';
import { ClientEvents } from './frame-schemas.js';

/**
 * What a client may see, by event type: the documented events. Anything else on a user's channel
 * (session and account events, or a type some group adds later) stays inside the service: fail
 * closed.
 */
const CLIENT_EVENTS: ReadonlySet<string> = new Set(Object.keys(ClientEvents));

/**
 * Events -> sockets. A session or account event closes the sockets of the sessions it ended; a
 * client event is serialized once and written to each of the user's ready sockets here.
 */
export function socketDelivery(metrics: RealtimeMetrics, clock: () => number) {
  return function deliver(delivery: Delivery, sockets: ReadonlySet<ChatSocket>): void {
    const { event } = delivery;
    for (const socket of sockets) {
      if (socket.sessionId !== undefined && endsSession(event, socket.sessionId))
        socket.close(Closures.sessionEnded);
    }
    if (!CLIENT_EVENTS.has(event.type)) return;
    const frame = Buffer.from(JSON.stringify(event));
    for (const socket of sockets) {
      if (!socket.ready || !socket.send(frame)) continue;
      metrics.eventDelivered(event.type, (clock() - delivery.publishedAt) / 1000);
    }
  };
}
