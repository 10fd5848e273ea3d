import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestApp } from '../helpers/test-app.js';
import { canRunPrivatePostgres, PrivatePostgres } from './private-servers.js';
import { newAppSecret } from './service-process.js';

const enabled = Boolean(process.env.TEST_DATABASE_URL) && canRunPrivatePostgres;
if (!enabled) {
  console.warn(
    'TEST_DATABASE_URL not set or no PostgreSQL binaries: skipping test/scale/token-verification-outage.',
  );
}

describe.skipIf(!enabled)('verifying a token while the database is away', () => {
  let postgres: PrivatePostgres;
  let t: TestApp;

  beforeAll(async () => {
    postgres = await PrivatePostgres.create();
    t = await TestApp.start(
      { env: { DATABASE_URL: postgres.url, APP_SECRET: newAppSecret() }, drop: async () => {} },
      { env: { LOG_LEVEL: 'silent' } },
    );
  });
  afterAll(async () => {
    await postgres.start().catch(() => undefined);
    await t?.close();
    await postgres?.destroy();
  });

  it('answers 503 unavailable, not 401, when the signing keys cannot be reloaded', async () => {
    const account = await t.register();
    await postgres.stop();
    t.clock.advance(61_000); // the next verification re-reads the signing keys
    const response = await t.call('GET', '/api/profile', { token: account.accessToken });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({ error: 'unavailable' });
    await postgres.start();
  });
});
