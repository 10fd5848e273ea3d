import type { FastifyBaseLogger } from 'fastify';
import { Subscribers, type BusEvent, type DeliveryListener, type EventBus } from './bus.js';

/** One process: events go straight to this instance's listeners, in publish order. */
export class MemoryEventBus implements EventBus {
  private readonly subscribers = new Subscribers();

  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly clock: () => number = Date.now,
  ) {}

  publish(userIds: readonly string[], event: BusEvent): void {
    const publishedAt = this.clock();
    for (const userId of userIds) {
      this.subscribers.deliver({ userId, event, publishedAt }, (error) =>
        this.log.error({ err: error }, 'an event listener failed'),
      );
    }
  }

  async subscribe(userId: string, listener: DeliveryListener): Promise<() => void> {
    this.subscribers.add(userId, listener);
    return () => void this.subscribers.remove(userId, listener);
  }

  onResync(): () => void {
    return () => undefined; // nothing in one process can lose an event
  }

  async close(): Promise<void> {}
}
