// Typing frames while the database is away: the outage is logged once (with a count), as for
// requests and token checks, not a warning with a stack per frame, which a client could send at
// will; the frames are counted as `failed`, and the socket stays open.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, type Backend, type ProvisionedBackend } from '../../helpers/backends.js';
import { TestApp } from '../../helpers/test-app.js';
import { SocketClient } from './socket-client.js';

const postgres = backends.find((backend) => backend.name.startsWith('postgres'));

describe.skipIf(postgres === undefined)('typing frames while the database is away', () => {
  let t: TestApp;
  let database: ProvisionedBackend;
  beforeAll(async () => {
    database = await (postgres as Backend).provision();
    t = await TestApp.start(database);
  });
  afterAll(() => t.close());

  it('logs the outage once, not a stack per typing frame, and counts the frames failed', async () => {
    const base = await t.listen();
    const account = await t.register();
    const socket = await SocketClient.connect(`${base.replace('http', 'ws')}/api/chat/ws`, {
      token: account.accessToken,
    });
    await socket.waitFor('ready');
    await database.drop(); // the database goes away (FORCE ends the service's connections)
    const before = t.logs.length;
    for (let i = 0; i < 10; i++) {
      socket.send({ type: 'typing', conversation_id: randomUUID() });
      await sleep(50);
    }
    const failed = async () =>
      Number(
        /^chat_typing_frames_total\{outcome="failed"\} (\d+)$/m.exec(
          (await t.call('GET', '/metrics')).body,
        )?.[1] ?? 0,
      );
    await expect.poll(failed).toBe(10);
    const messages = t.logs.slice(before).map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages.filter((msg) => msg === 'chat socket: typing failed')).toEqual([]);
    expect(socket.isOpen).toBe(true);
    socket.ws.terminate();
  });
});
