import { setTimeout as sleep } from 'node:timers/promises';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisWindowStore } from '../../src/limits/redis-store.js';
import { capturedLog } from '../helpers/captured-log.js';
import { canRunPrivateRedis, PrivateRedis } from '../scale/private-servers.js';
import { waitUntil } from '../scale/service-process.js';

if (!canRunPrivateRedis) console.warn('no redis-server: skipping test/limits/redis-errors.');

const PASSWORD = 'the-right-password-9f3a';
const WRONG = 'a-wrong-password-7c1e';

/** Why Redis refuses the service is in the log (once), and no password is. */
describe.skipIf(!canRunPrivateRedis)('a Redis that refuses the service', () => {
  let redis: PrivateRedis;
  beforeAll(async () => {
    redis = await PrivateRedis.create();
    redis.cli('CONFIG', 'SET', 'requirepass', PASSWORD);
  });
  afterAll(() => redis?.kill());

  it('is logged with its reason, once while it keeps failing', async () => {
    const { log, lines } = capturedLog();
    const url = redis.url.replace('redis://', `redis://:${WRONG}@`);
    const store = await RedisWindowStore.connect(url, log);
    try {
      await waitUntil('the failure to be logged', async () => lines.length > 0, 5_000);
      await sleep(1_000); // reconnect attempts meanwhile
      const failures = lines.filter((line) => /Redis connection failing/.test(line));
      expect(failures).toHaveLength(1);
      expect(JSON.parse(failures[0] as string)).toMatchObject({
        redis: 'rate limits',
        reason: expect.stringMatching(/WRONGPASS|invalid username-password|NOAUTH/i),
      });
      expect(lines.join('\n')).not.toContain(WRONG);
      expect(lines.join('\n')).not.toContain(PASSWORD);
    } finally {
      await store.close();
    }
  });
});

describe('a Redis address where nothing listens', () => {
  it('is logged with its error code (ECONNREFUSED), which the log does not withhold', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    const { log, lines } = capturedLog();
    const store = await RedisWindowStore.connect(`redis://127.0.0.1:${port}`, log);
    try {
      await waitUntil('the failure to be logged', async () => lines.length > 0, 5_000);
      const failure = lines.find((line) => /Redis connection failing/.test(line));
      expect(JSON.parse(failure as string)).toMatchObject({ errorCode: 'ECONNREFUSED' });
    } finally {
      await store.close();
    }
  });
});
