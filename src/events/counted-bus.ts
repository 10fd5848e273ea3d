import type { EventBus } from './bus.js';

/** `bus`, telling `count` of every publication (for the events-published metric). */
export function countingPublications(
  bus: EventBus,
  count: (type: string, recipients: number) => void,
): EventBus {
  return {
    publish(userIds, event) {
      count(event.type, userIds.length);
      bus.publish(userIds, event);
    },
    subscribe: (userId, listener) => bus.subscribe(userId, listener),
    onResync: (listener) => bus.onResync(listener),
    close: () => bus.close(),
  };
}
