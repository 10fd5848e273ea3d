import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatSocket } from '../../../src/chat/realtime/chat-socket.js';
import { resyncSockets } from '../../../src/chat/realtime/resync.js';
import { backends } from '../../helpers/backends.js';
import { TestApp } from '../../helpers/test-app.js';

const log = pino({ level: 'silent' });

/** What a resync asks of a socket (a structural stand-in for a ChatSocket). */
class FakeSocket {
  readonly ready = true;
  readonly frames: unknown[] = [];
  closedWith: number | undefined;
  constructor(readonly sessionId: string) {}
  send(frame: string): boolean {
    this.frames.push(JSON.parse(frame));
    return true;
  }
  close(closure: { code: number }): void {
    this.closedWith ??= closure.code;
  }
}

const asSockets = (sockets: FakeSocket[]) => sockets as unknown as ChatSocket[];

describe.each(backends)('a resync of many sockets ($name)', (backend) => {
  let t: TestApp;
  let liveSession: string;
  beforeAll(async () => {
    t = await TestApp.start(backend);
    const account = await t.register();
    const listed = await t.call('GET', '/api/sessions', { token: account.accessToken });
    liveSession = (listed.json().sessions as Array<{ id: string }>)[0]!.id;
  });
  afterAll(() => t?.close());

  const resync = (sockets: FakeSocket[]) =>
    resyncSockets(asSockets(sockets), { db: t.db, clock: t.clock.now }, log);

  it('rechecks every session, however many: past each lookup batch too, an ended one closes', async () => {
    const live = new FakeSocket(liveSession);
    // Over two batches of lookups and into a third: ended sessions, none of them in the database.
    const ended = Array.from({ length: 1_001 }, () => new FakeSocket(randomUUID()));
    resync([live, ...ended]);
    await expect.poll(() => ended.filter((s) => s.closedWith === undefined).length).toBe(0);
    expect(new Set(ended.map((s) => s.closedWith))).toEqual(new Set([4401]));
    // The live one was looked up in the first batch, long done by now.
    expect(live.closedWith).toBeUndefined();
    for (const socket of [live, ...ended])
      expect(socket.frames).toEqual([{ type: 'resync_required' }]);
  });

  it('closes every socket of a session that ended, not only the first', async () => {
    const session = randomUUID();
    const sockets = [new FakeSocket(session), new FakeSocket(session), new FakeSocket(session)];
    const live = [new FakeSocket(liveSession), new FakeSocket(liveSession)];
    resync([sockets[0]!, ...live, sockets[1]!, sockets[2]!]);
    await expect.poll(() => sockets.map((s) => s.closedWith)).toEqual([4401, 4401, 4401]);
    expect(live.map((s) => s.closedWith)).toEqual([undefined, undefined]);
  });
});
