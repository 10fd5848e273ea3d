import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maySend, sendRefusal, type SendFacts } from '../../src/chat/send-rules.js';

const facts: fc.Arbitrary<SendFacts> = fc.record({
  peerId: fc.constantFrom(null, 'a-peer'),
  block: fc.record({ byMe: fc.boolean(), byThem: fc.boolean() }),
  policy: fc.constantFrom(null, 'everyone' as const, 'followers' as const, 'nobody' as const),
  follows: fc.boolean(),
});

describe('maySend', () => {
  it('says yes exactly where sendRefusal finds no refusal', () => {
    // Every combination there is (2 × 4 × 4 × 2), so the two forms cannot drift apart.
    fc.assert(
      fc.property(facts, (f) => {
        expect(maySend(f)).toBe(sendRefusal(f) === undefined);
      }),
      { numRuns: 500 },
    );
  });
});
