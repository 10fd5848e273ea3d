import type { IncomingMessage } from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../../helpers/backends.js';
import type { Account } from '../../helpers/test-app.js';
import { RealtimeApp } from './fixture.js';

// A full collection on demand, so that "unreachable" can be checked rather than hoped for.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Collects until `ref` is gone, a few times at most (a collection may wait for a turn). */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 10 && ref.deref() !== undefined; i++) {
    await nextTurn();
    collectGarbage();
  }
  return ref.deref() === undefined;
}

describe.each(backends)('chat socket: memory held per socket ($name)', (backend) => {
  let rt: RealtimeApp;
  let alice: Account;

  beforeAll(async () => {
    rt = await RealtimeApp.start(backend);
    alice = await rt.t.register();
  });
  afterAll(() => rt?.close());

  it('keeps nothing of the upgrade request (headers, token, reply) once the socket is open', async () => {
    const upgrades: WeakRef<IncomingMessage>[] = [];
    const remember = (request: IncomingMessage) => upgrades.push(new WeakRef(request));
    rt.t.app.server.on('upgrade', remember);
    const client = await rt.connect(alice);
    rt.t.app.server.off('upgrade', remember);
    await client.roundTrip();

    expect(upgrades).toHaveLength(1);
    expect(await collected(upgrades[0] as WeakRef<IncomingMessage>)).toBe(true);
    await client.roundTrip(); // and the socket still works
    expect(client.isOpen).toBe(true);
    client.close();
  });
});
