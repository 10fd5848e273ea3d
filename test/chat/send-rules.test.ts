import { describe, expect, it } from 'vitest';
import { maySend, sendRefusal, type SendFacts } from '../../src/chat/send-rules.js';

/** Every combination of the facts a send is judged by (2 × 2 × 2 × 4 × 2 = 64). */
function everyCombination(): SendFacts[] {
  const all: SendFacts[] = [];
  for (const peerId of [null, 'a-peer'])
    for (const byMe of [false, true])
      for (const byThem of [false, true])
        for (const policy of [null, 'everyone', 'followers', 'nobody'] as const)
          for (const follows of [false, true])
            all.push({ peerId, block: { byMe, byThem }, policy, follows });
  return all;
}

describe('maySend', () => {
  it('says yes exactly where sendRefusal finds no refusal, for every combination of facts', () => {
    const combinations = everyCombination();
    expect(combinations).toHaveLength(64);
    const disagreements = combinations.filter((f) => maySend(f) !== (sendRefusal(f) === undefined));
    expect(disagreements).toEqual([]);
    // Both answers occur, so the comparison is not between two constants.
    expect(new Set(combinations.map(maySend))).toEqual(new Set([true, false]));
  });
});
