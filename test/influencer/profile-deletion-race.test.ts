import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as ProfilesStore from '../../src/influencer/profiles.store.js';
import { backends } from '../helpers/backends.js';
import { arm, type GateSlot } from '../helpers/gate.js';
import { TestApp } from '../helpers/test-app.js';
import { confirmedAccount, hasProfileRow, uniqueHandle } from './support.js';

/**
 * A profile's creation checks the token (and the account), then inserts: an account deleted in
 * between must answer 401, as if the token named no account, not 500 from the foreign key. Held
 * by a gate before the insert's transaction, on both databases (test/influencer/profiles.test.ts has the chaos
 * version, which lands the race only some of the time).
 */
const gate = vi.hoisted(() => ({}) as GateSlot);

// Its check that the account has no profile yet, the last read before the insert.
vi.mock('../../src/influencer/profiles.store.js', async (importOriginal) =>
  (await import('../helpers/gate.js')).withGate(
    await importOriginal<typeof ProfilesStore>(),
    'findProfile',
    gate,
    'after',
  ),
);

describe.each(backends)('a profile created while its account is deleted ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('answers 401 unauthorized, and no profile is left', async () => {
    const account = await confirmedAccount(t);
    const { reached, release } = arm(gate);
    const creating = t.post(
      '/api/influencers',
      { handle: uniqueHandle('gone'), display_name: 'Ada Lovelace', categories: ['science'] },
      { token: account.accessToken },
    );
    await reached;
    const deleted = await t.call('DELETE', '/api/profile', {
      token: account.accessToken,
      body: { password: account.password },
    });
    expect(deleted.statusCode).toBe(200);
    release();
    const created = await creating;
    expect([created.statusCode, created.json().error]).toEqual([401, 'unauthorized']);
    expect(await hasProfileRow(t, account.userId)).toBe(false);
  });
});
