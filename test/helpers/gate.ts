/**
 * A one-shot hold point for code wrapped by `vi.mock`: a test arms it, the wrapped code waits at
 * it once (the next call only), and the test does what must happen meanwhile, then releases it.
 * The slot itself comes from `vi.hoisted(() => ({}) as GateSlot)`, as mock factories run first.
 */
export interface GateSlot {
  next?: { entered(): void; until: Promise<void> } | undefined;
}

/** Arms `slot`: `reached` resolves once the wrapped code waits there, `release` lets it go on. */
export function arm(slot: GateSlot): { reached: Promise<void>; release(): void } {
  let entered!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => (entered = resolve));
  slot.next = { entered, until: new Promise<void>((resolve) => (release = resolve)) };
  return { reached, release };
}

/** Waits at `slot` if it is armed, disarming it; at once otherwise. */
export async function pass(slot: GateSlot): Promise<void> {
  const held = slot.next;
  slot.next = undefined;
  if (held === undefined) return;
  held.entered();
  await held.until;
}

/**
 * `module` with its async function `name` waiting at `slot`: before it runs, or once it has
 * answered (`after`). For a `vi.mock` factory:
 * `async (importOriginal) => (await import('../helpers/gate.js')).withGate(await importOriginal(), 'f', slot)`.
 */
export function withGate<M extends object>(
  module: M,
  name: keyof M,
  slot: GateSlot,
  when: 'before' | 'after' = 'before',
): M {
  const original = module[name] as (...args: unknown[]) => Promise<unknown>;
  const gated = async (...args: unknown[]) => {
    if (when === 'before') await pass(slot);
    const answer = await original(...args);
    if (when === 'after') await pass(slot);
    return answer;
  };
  return { ...module, [name]: gated };
}
