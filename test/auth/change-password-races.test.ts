import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as Transaction from '../../src/db/transaction.js';
import { backends } from '../helpers/backends.js';
import { arm, type GateSlot } from '../helpers/gate.js';
import { randomIp, STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';

/**
 * change-password checks the session at authentication, then hashes (a while), then writes. A
 * session ended meanwhile (the owner revoked it from another device) stops it, as it stops
 * DELETE /api/profile: else the password of an intruder the owner just revoked would replace
 * the owner's, and end the owner's sessions. The gate holds the write's transaction.
 */
const gate = vi.hoisted(() => ({}) as GateSlot);
vi.mock('../../src/db/transaction.js', async (importOriginal) =>
  (await import('../helpers/gate.js')).withGate(
    await importOriginal<typeof Transaction>(),
    'inTransaction',
    gate,
  ),
);

const INTRUDER_PASSWORD = 'intruder-Chose-this-77';

describe.each(backends)('change-password from a session ended meanwhile ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('the owner revokes the session while its change hashes: 401, and the owner keeps password and session', async () => {
    const intruder = await t.register();
    const owner = await t.login(intruder.email, STRONG_PASSWORD);
    const intruderSid = decodeJwt(intruder.accessToken).sid as string;

    const { reached, release } = arm(gate);
    const changing = t.post(
      '/api/change-password',
      { password: STRONG_PASSWORD, new_password: INTRUDER_PASSWORD },
      { token: intruder.accessToken },
    );
    await reached; // the password checked, the new hash computed; nothing written
    const revoked = await t.call('DELETE', `/api/sessions/${intruderSid}`, {
      token: owner.accessToken,
    });
    expect(revoked.statusCode).toBe(200);
    release();
    const changed = await changing;

    const ownerStillIn = await t.call('GET', '/api/profile', { token: owner.accessToken });
    const oldPasswordLogin = await t.post(
      '/api/login',
      { email: intruder.email, password: STRONG_PASSWORD },
      { ip: randomIp() },
    );
    expect({
      change: changed.statusCode,
      ownerSession: ownerStillIn.statusCode,
      ownerPasswordWorks: oldPasswordLogin.statusCode,
    }).toEqual({ change: 401, ownerSession: 200, ownerPasswordWorks: 200 });
  });
});
