import { decodeProtectedHeader } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../src/security/secret-box.js';
import { deriveServerKeys } from '../../src/security/server-keys.js';
import {
  insertNewKey,
  loadSigningKeys,
  pruneRetiredKeys,
} from '../../src/security/signing-keys.js';
import { backends, type ProvisionedBackend } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';

const APP_SECRET = 'rotation-test-secret-of-at-least-32-bytes';
const MINUTE = 60_000;

describe.each(backends)('signing key rotation ($name)', (backend) => {
  let t: TestApp;
  const box = createSecretBox(deriveServerKeys(APP_SECRET).secretBox);
  const kidOf = (token: string) => decodeProtectedHeader(token).kid;
  const jwksKids = async () =>
    ((await t.call('GET', '/.well-known/jwks.json')).json().keys as { kid: string }[]).map(
      (k) => k.kid,
    );

  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { APP_SECRET } });
  });
  afterAll(() => t.close());

  it('names APP_SECRET when the keys were sealed under another secret', async () => {
    const other = createSecretBox(
      deriveServerKeys('another-secret-of-at-least-32-bytes!').secretBox,
    );
    await expect(loadSigningKeys(t.db, other, t.clock.now())).rejects.toThrow(
      /^signing key \S+ cannot be unsealed: APP_SECRET is not the secret/,
    );
  });

  // README: "the JWKS (`max-age=300`)"; the 10-minute activation delay is reckoned from it.
  it('serves the JWKS with Cache-Control: public, max-age=300', async () => {
    const response = await t.call('GET', '/.well-known/jwks.json');
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('public, max-age=300');
  });

  it('publishes a new key at once, signs with it after 10 minutes, and retires the old one later', async () => {
    const before = await t.register();
    const oldKid = kidOf(before.accessToken);

    await insertNewKey(t.db, box, t.clock.now());
    t.clock.advance(MINUTE + 1_000); // instances re-read the key table every minute
    expect(await jwksKids()).toHaveLength(2);
    expect(kidOf((await t.register()).accessToken)).toBe(oldKid);

    t.clock.advance(10 * MINUTE);
    const after = await t.register();
    const newKid = kidOf(after.accessToken);
    expect(newKid).not.toBe(oldKid);
    expect(await jwksKids()).toContain(newKid);

    // Too early to prune: tokens signed by the old key may still be valid.
    expect(await pruneRetiredKeys(t.db, box, t.clock.now())).toEqual([]);
    t.clock.advance(20 * MINUTE);
    expect(await pruneRetiredKeys(t.db, box, t.clock.now())).toEqual([oldKid]);
    t.clock.advance(MINUTE + 1_000);
    expect(await jwksKids()).toEqual([newKid]);
    const profile = await t.call('GET', '/api/profile', { token: after.accessToken });
    expect(profile.statusCode).toBe(401); // expired by now: 32 minutes passed
    const fresh = await t.login(after.email, after.password);
    expect(kidOf(fresh.accessToken)).toBe(newKid);
    expect((await t.call('GET', '/api/profile', { token: fresh.accessToken })).statusCode).toBe(
      200,
    );
  });

  // README: "every instance starts signing with it 10 minutes later, when every verifier caching
  // the JWKS (`max-age=300`) has it"; "deletes keys replaced at least 20 minutes earlier, when no
  // token they signed can still be valid".
  it('signs with a new key only 10 minutes after it was added, and keeps the old one while its last token lives', async () => {
    const oldKid = kidOf((await t.register()).accessToken);
    const newKid = await insertNewKey(t.db, box, t.clock.now());

    // 9 min 58 s after it was added: published, but not signing yet.
    t.clock.advance(10 * MINUTE - 2_000);
    expect(await jwksKids()).toContain(newKid);
    const last = await t.register(); // among the last tokens the old key signs
    expect(kidOf(last.accessToken)).toBe(oldKid);

    t.clock.advance(3_000);
    expect(kidOf((await t.register()).accessToken)).toBe(newKid);

    // 14.5 minutes after the switch the old key's last token is still valid: its key stays.
    t.clock.advance(14.5 * MINUTE);
    expect(await pruneRetiredKeys(t.db, box, t.clock.now())).toEqual([]);
    t.clock.advance(MINUTE / 4); // still inside its 15 minutes; keys re-read meanwhile
    expect((await t.call('GET', '/api/profile', { token: last.accessToken })).statusCode).toBe(200);
  });
});

describe.each(backends)('a retired signing key ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { APP_SECRET } });
  });
  afterAll(() => t.close());

  it('voids the tokens it signed at the next key reload, even ones already verified', async () => {
    const account = await t.register();
    const kid = decodeProtectedHeader(account.accessToken).kid as string;
    const profile = () => t.call('GET', '/api/profile', { token: account.accessToken });
    expect((await profile()).statusCode).toBe(200); // verified and cached

    // A key withdrawn outright (say, after a leak) rather than retired on schedule.
    await insertNewKey(t.db, box(), t.clock.now());
    await t.db.deleteFrom('signing_keys').where('kid', '=', kid).execute();
    t.clock.advance(MINUTE + 1_000);
    expect((await profile()).statusCode).toBe(401);
  });
});

function box() {
  return createSecretBox(deriveServerKeys(APP_SECRET).secretBox);
}

describe.each(backends)('signing keys that cannot be re-read ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { APP_SECRET } });
  });
  afterAll(() => t.close());

  const hideKeys = () => sql`alter table signing_keys rename to signing_keys_away`.execute(t.db);
  const showKeys = () => sql`alter table signing_keys_away rename to signing_keys`.execute(t.db);

  it('a refresh that rotated its session still gets its tokens, signed with the keys held', async () => {
    const account = await t.register();
    t.clock.advance(MINUTE + 1_000); // the next use of the keys re-reads them
    await hideKeys();
    try {
      const refreshed = await t.post('/api/refresh-token', { refresh_token: account.refreshToken });
      expect(refreshed.statusCode, refreshed.body).toBe(200);
      const { access_token, refresh_token } = refreshed.json();
      const kidOf = (token: string) => decodeProtectedHeader(token).kid;
      expect(kidOf(access_token)).toBe(kidOf(account.accessToken));
      expect((await t.call('GET', '/api/profile', { token: access_token })).statusCode).toBe(200);
      // The rotation it answered is the session's: the token it gave rotates again.
      await showKeys();
      const again = await t.post('/api/refresh-token', { refresh_token });
      expect(again.statusCode).toBe(200);
    } finally {
      await showKeys().catch(() => undefined);
    }
  });
});

// Signing keys are shared by every instance (API.md "Tokens"). Instance B saw no request while a
// rotated key waited out its activation, so it meets the new kid first in a burst: only the
// request that started the re-read waited for it, the others were answered 401 meanwhile.
describe.each(backends)(
  'a burst of tokens of a key this instance has not read yet ($name)',
  (backend) => {
    let provisioned: ProvisionedBackend;
    let a: TestApp;
    let b: TestApp;
    beforeAll(async () => {
      provisioned = await backend.provision();
      a = await TestApp.start(provisioned, { env: { APP_SECRET } });
      b = await TestApp.start(provisioned, { env: { APP_SECRET } });
    });
    afterAll(async () => {
      await a.close();
      await b.close();
      await provisioned.drop();
    });

    it('is accepted on every request, not only the one that started the re-read', async () => {
      const account = await a.register();
      expect((await b.call('GET', '/api/profile', { token: account.accessToken })).statusCode).toBe(
        200,
      );
      const box = createSecretBox(deriveServerKeys(APP_SECRET).secretBox);
      const newKid = await insertNewKey(a.db, box, a.clock.now());
      a.clock.advance(11 * MINUTE);
      b.clock.advance(11 * MINUTE);
      const fresh = await a.login(account.email, account.password);
      expect(decodeProtectedHeader(fresh.accessToken).kid).toBe(newKid);
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          b.call('GET', '/api/profile', { token: fresh.accessToken }),
        ),
      );
      expect(answers.map((r) => r.statusCode)).toEqual(Array(8).fill(200));
    });

    // README: "every instance re-reads the table every minute (and at once, rate-limited, on an
    // unknown `kid`)": the rate is one re-read per 5 s (access-tokens.ts), not per minute.
    it('is accepted once 5 s have passed since the last re-read, even one made just before the key was added', async () => {
      const account = await a.register();
      b.clock.advance(MINUTE + 1_000);
      // b re-reads its keys now (a minute has passed), before the new key exists.
      expect((await b.call('GET', '/api/profile', { token: account.accessToken })).statusCode).toBe(
        200,
      );

      // A key added long enough ago to sign at once (another instance's rotation b has not read).
      const newKid = await insertNewKey(a.db, box(), a.clock.now() - 11 * MINUTE);
      a.clock.advance(MINUTE + 1_000);
      const fresh = await a.login(account.email, account.password);
      expect(decodeProtectedHeader(fresh.accessToken).kid).toBe(newKid);

      b.clock.advance(6_000);
      expect((await b.call('GET', '/api/profile', { token: fresh.accessToken })).statusCode).toBe(
        200,
      );
    });
  },
);
