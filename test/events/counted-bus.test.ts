import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { countingPublications } from '../../src/events/counted-bus.js';
import type { Delivery } from '../../src/events/bus.js';
import { MemoryEventBus } from '../../src/events/memory-bus.js';

describe('the events-published count', () => {
  it('counts a publication once per recipient channel (README: chat_events_published_total)', async () => {
    const counted: Array<[string, number]> = [];
    const bus = countingPublications(new MemoryEventBus(pino({ level: 'silent' })), (type, n) =>
      counted.push([type, n]),
    );
    const got: Delivery[] = [];
    await bus.subscribe('alice', (d) => got.push(d));
    await bus.subscribe('bob', (d) => got.push(d));
    bus.publish(['alice', 'bob'], { type: 'message.deleted' });
    bus.publish(['alice'], { type: 'typing' });
    expect(counted).toEqual([
      ['message.deleted', 2],
      ['typing', 1],
    ]);
    expect(got.map((d) => d.userId)).toEqual(['alice', 'bob', 'alice']);
  });
});
