import { hash } from '@node-rs/argon2';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as Hashing from '../../src/security/password-hashing.js';
import { backends } from '../helpers/backends.js';
import { arm, type GateSlot } from '../helpers/gate.js';
import { randomIp, STRONG_PASSWORD, TestApp, type Account } from '../helpers/test-app.js';

const NEW_PASSWORD = 'another-Quiet-harbour-93';

/** A gate right after a password verification, armed by one test: the hash's race window. */
const gate = vi.hoisted(() => ({}) as GateSlot);

vi.mock('../../src/security/password-hashing.js', async (importOriginal) => {
  const original = await importOriginal<typeof Hashing>();
  const { pass } = await import('../helpers/gate.js');
  return {
    ...original,
    createPasswordHasher: async (...args: Parameters<typeof original.createPasswordHasher>) => {
      const hasher = await original.createPasswordHasher(...args);
      return {
        ...hasher,
        verify: async (storedHash: string, password: string) => {
          const verified = await hasher.verify(storedHash, password);
          await pass(gate);
          return verified;
        },
      };
    },
  };
});

/**
 * A login checks the password it read, then starts its session: whatever changed the password (or
 * deleted the account) while the hash ran must win. Each test sweeps the second request's start
 * over the first one's hash, so that some of the runs land in the gap.
 */
describe.each(backends)('logins racing password changes and deletions ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const login = (account: Account) =>
    t.post('/api/login', { email: account.email, password: STRONG_PASSWORD }, { ip: randomIp() });

  async function changeWhileLoggingIn(account: Account, delayMs: number) {
    const changing = t.post(
      '/api/change-password',
      { password: STRONG_PASSWORD, new_password: NEW_PASSWORD },
      { token: account.accessToken },
    );
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    const [changed, loggedIn] = await Promise.all([changing, login(account)]);
    const survives =
      loggedIn.statusCode === 200 &&
      (await t.call('GET', '/api/profile', { token: loggedIn.json().access_token })).statusCode ===
        200;
    return { changed, loggedIn, survives };
  }

  it('a login that checked the old password while the password changed answers 401, starts no session', async () => {
    const account = await t.register();
    const { reached, release } = arm(gate);
    const loggingIn = login(account);
    await reached; // its password checked, nothing read or written since
    const changed = await t.post(
      '/api/change-password',
      { password: STRONG_PASSWORD, new_password: NEW_PASSWORD },
      { token: account.accessToken },
    );
    expect(changed.statusCode).toBe(200);
    release();
    const loggedIn = await loggingIn;
    expect([loggedIn.statusCode, loggedIn.json().error]).toEqual([401, 'invalid_credentials']);
    const sessions = await t.call('GET', '/api/sessions', { token: account.accessToken });
    expect(sessions.json().sessions).toHaveLength(1); // the changing one alone
  });

  it('no session signed in with the old password outlives a password change', async () => {
    const survivors: number[] = [];
    for (let delayMs = 0; delayMs <= 40; delayMs += 2) {
      const account = await t.register();
      const { changed, loggedIn, survives } = await changeWhileLoggingIn(account, delayMs);
      expect(changed.statusCode).toBe(200);
      expect([200, 401]).toContain(loggedIn.statusCode);
      if (survives) survivors.push(delayMs);
    }
    expect(survivors).toEqual([]);
  });

  it('a login that upgrades the hash meanwhile does not make the right current password wrong', async () => {
    const refused: string[] = [];
    for (let i = 0; i < 8; i++) {
      const account = await t.register();
      // A hash made with other parameters: the login rehashes it while the change runs.
      const former = await hash(STRONG_PASSWORD, { memoryCost: 19_456, timeCost: 2 });
      await t.db
        .updateTable('users')
        .set({ password_hash: former })
        .where('id', '=', account.userId)
        .execute();
      const { changed } = await changeWhileLoggingIn(account, (i % 4) * 3);
      if (changed.statusCode !== 200) refused.push(`${changed.statusCode} ${changed.json().error}`);
    }
    expect(refused).toEqual([]);
  });

  it('a login racing the deletion of its account answers 200 or 401, never 5xx', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const account = await t.register();
      const [deleted, loggedIn] = await Promise.all([
        t.call('DELETE', '/api/profile', {
          token: account.accessToken,
          body: { password: STRONG_PASSWORD },
        }),
        login(account),
      ]);
      expect(deleted.statusCode).toBe(200);
      statuses.push(loggedIn.statusCode);
    }
    expect(statuses.filter((status) => status !== 200 && status !== 401)).toEqual([]);
  });
});
