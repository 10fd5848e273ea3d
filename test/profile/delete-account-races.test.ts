import { hash } from '@node-rs/argon2';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as Deletion from '../../src/accounts/deletion.js';
import { backends } from '../helpers/backends.js';
import { arm, type GateSlot } from '../helpers/gate.js';
import { randomIp, STRONG_PASSWORD, TestApp, type Account } from '../helpers/test-app.js';

/**
 * `DELETE /api/profile` checks the password (a hash: a while), then deletes. These tests hold it
 * between the two (a gate before the deletion's transaction) while something else commits: what
 * committed meanwhile must win, as it does for a login or a password change.
 */
const gate = vi.hoisted(() => ({}) as GateSlot);

vi.mock('../../src/accounts/deletion.js', async (importOriginal) =>
  (await import('../helpers/gate.js')).withGate(
    await importOriginal<typeof Deletion>(),
    'deleteAccountRecords',
    gate,
  ),
);

const NEW_PASSWORD = 'another-Quiet-harbour-93';

describe.each(backends)('an account deletion racing other writes ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  /** Starts the deletion, runs `meanwhile` once its password is checked, then lets it go on. */
  async function deleteWhile(account: Account, meanwhile: () => Promise<void>) {
    const { reached, release } = arm(gate);
    const deleting = t.call('DELETE', '/api/profile', {
      token: account.accessToken,
      body: { password: STRONG_PASSWORD },
    });
    await reached;
    await meanwhile();
    release();
    return deleting;
  }

  const signsIn = async (account: Account, password: string) =>
    (await t.post('/api/login', { email: account.email, password }, { ip: randomIp() })).statusCode;

  it('a password change from another device meanwhile stops it: 401, the account stays', async () => {
    const account = await t.register();
    const owner = await t.login(account.email, STRONG_PASSWORD);
    const deleted = await deleteWhile(account, async () => {
      const changed = await t.post(
        '/api/change-password',
        { password: STRONG_PASSWORD, new_password: NEW_PASSWORD },
        { token: owner.accessToken },
      );
      expect(changed.statusCode).toBe(200);
    });
    expect([deleted.statusCode, deleted.json().error]).toEqual([401, 'unauthorized']);
    expect(await signsIn(account, NEW_PASSWORD)).toBe(200);
  });

  it('its session ended meanwhile (logout from everywhere) stops it: 401, the account stays', async () => {
    const account = await t.register();
    const owner = await t.login(account.email, STRONG_PASSWORD);
    const deleted = await deleteWhile(account, async () => {
      const ended = await t.post('/api/logout', { all: true }, { token: owner.accessToken });
      expect(ended.statusCode).toBe(200);
    });
    expect(deleted.statusCode).toBe(401);
    expect(await signsIn(account, STRONG_PASSWORD)).toBe(200);
  });

  it('the same password hashed again meanwhile (a login upgrading it) still deletes: 200', async () => {
    const account = await t.register();
    const deleted = await deleteWhile(account, async () => {
      const again = await hash(STRONG_PASSWORD, { memoryCost: 19_456, timeCost: 2 });
      await t.db
        .updateTable('users')
        .set({ password_hash: again })
        .where('id', '=', account.userId)
        .execute();
    });
    expect(deleted.statusCode).toBe(200);
    expect(await signsIn(account, STRONG_PASSWORD)).toBe(401);
  });
});
