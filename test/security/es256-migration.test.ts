import { randomUUID } from 'node:crypto';
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  jwtVerify,
  SignJWT,
  type CryptoKey,
  type JWK,
} from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createSecretBox } from '../../src/security/secret-box.js';
import { deriveServerKeys } from '../../src/security/server-keys.js';
import { pruneRetiredKeys } from '../../src/security/signing-keys.js';
import { backends, type ProvisionedBackend } from '../helpers/backends.js';
import { TestApp, type Account } from '../helpers/test-app.js';

const APP_SECRET = 'es256-migration-secret-of-at-least-32-bytes';
const PUBLIC_URL = 'https://accounts.example.test';
const MINUTE = 60_000;
const box = createSecretBox(deriveServerKeys(APP_SECRET).secretBox);

interface LegacyKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
}

/** The key an earlier version of the service made on its first start: Ed25519, stored as it did. */
async function insertEdDsaKey(db: Db, now: number): Promise<LegacyKey> {
  const { privateKey, publicKey } = await generateKeyPair('EdDSA', {
    crv: 'Ed25519',
    extractable: true,
  });
  const kid = randomUUID();
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'EdDSA', use: 'sig' };
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'EdDSA' };
  await db
    .insertInto('signing_keys')
    .values({
      kid,
      algorithm: 'EdDSA',
      public_jwk: JSON.stringify(publicJwk),
      sealed_private_jwk: box.seal(JSON.stringify(privateJwk)),
      created_at: now,
    })
    .execute();
  return { kid, privateKey };
}

/** An access token for `account`'s session as the earlier version signed them, `ageMs` ago. */
function legacyToken(account: Account, key: LegacyKey, now: number, ageMs: number) {
  const issuedAt = Math.floor((now - ageMs) / 1000);
  return new SignJWT({ sid: decodeJwt(account.accessToken).sid })
    .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: key.kid })
    .setSubject(account.userId)
    .setIssuer(PUBLIC_URL)
    .setAudience(PUBLIC_URL)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + 900)
    .sign(key.privateKey);
}

/** A fresh database that an earlier version has run on: migrated, with its EdDSA key. */
async function databaseOfEarlierVersion(backend: ProvisionedBackend): Promise<LegacyKey> {
  const db = await openDatabase(loadConfig({ ...backend.env, APP_SECRET }).database);
  try {
    await migrateToLatest(db);
    return await insertEdDsaKey(db, Date.now() - 60 * MINUTE);
  } finally {
    await db.destroy();
  }
}

describe.each(backends)('moving from EdDSA to ES256 keys ($name)', (backend) => {
  let provisioned: ProvisionedBackend;
  let legacy: LegacyKey;
  let t: TestApp;
  const jwks = async () =>
    (await t.call('GET', '/.well-known/jwks.json')).json() as { keys: JWK[] };
  const profileWith = (token: string) => t.call('GET', '/api/profile', { token });

  beforeAll(async () => {
    provisioned = await backend.provision();
    legacy = await databaseOfEarlierVersion(provisioned);
    t = await TestApp.start(provisioned, { env: { APP_SECRET, PUBLIC_URL } });
  });
  afterAll(async () => {
    await t.close();
    await provisioned.drop();
  });

  it('signs new tokens with a new ES256 key at once, and publishes both keys', async () => {
    const account = await t.register();
    const header = decodeProtectedHeader(account.accessToken);
    expect(header.alg).toBe('ES256');
    expect(header.kid).not.toBe(legacy.kid);
    const { keys } = await jwks();
    expect(keys).toHaveLength(2);
    expect(keys).toContainEqual(expect.objectContaining({ kid: legacy.kid, alg: 'EdDSA' }));
    expect(keys).toContainEqual(
      expect.objectContaining({ kid: header.kid, alg: 'ES256', kty: 'EC', crv: 'P-256' }),
    );
  });

  it('still accepts the tokens the EdDSA key signed, here and for verifiers using the JWKS', async () => {
    const account = await t.register();
    const token = await legacyToken(account, legacy, t.clock.now(), 5 * MINUTE);
    expect((await profileWith(token)).statusCode).toBe(200);
    const { payload } = await jwtVerify(token, createLocalJWKSet(await jwks()), {
      algorithms: ['EdDSA'],
      issuer: PUBLIC_URL,
      audience: PUBLIC_URL,
      currentDate: new Date(t.clock.now()),
    });
    expect(payload.sub).toBe(account.userId);
    t.clock.advance(MINUTE + 1_000); // a key reload keeps the EdDSA key
    expect((await profileWith(token)).statusCode).toBe(200);
  });

  it('pins the algorithm per key: a token naming the EdDSA key with another alg is refused', async () => {
    const account = await t.register();
    const { privateKey } = await generateKeyPair('ES256');
    const claims = decodeJwt(account.accessToken);
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: legacy.kid })
      .sign(privateKey);
    expect((await profileWith(forged)).statusCode).toBe(401);
  });

  it('lets the EdDSA key be pruned once every token it signed has expired', async () => {
    const account = await t.register();
    const es256Kid = decodeProtectedHeader(account.accessToken).kid;
    expect(await pruneRetiredKeys(t.db, box, t.clock.now())).toEqual([]);
    t.clock.advance(30 * MINUTE);
    expect(await pruneRetiredKeys(t.db, box, t.clock.now())).toEqual([legacy.kid]);
    t.clock.advance(MINUTE + 1_000);
    expect((await jwks()).keys.map((k) => k.kid)).toEqual([es256Kid]);
    const fresh = await t.login(account.email, account.password);
    expect(decodeProtectedHeader(fresh.accessToken)).toMatchObject({ alg: 'ES256', kid: es256Kid });
    expect((await profileWith(fresh.accessToken)).statusCode).toBe(200);
  });
});

describe.each(backends.filter((b) => b.name !== 'sqlite'))(
  'instances of the new version starting together on an EdDSA-only database ($name)',
  (backend) => {
    it('agree on one new ES256 key', async () => {
      const provisioned = await backend.provision();
      const legacy = await databaseOfEarlierVersion(provisioned);
      const options = { env: { APP_SECRET, PUBLIC_URL } };
      const apps = await Promise.all([1, 2, 3].map(() => TestApp.start(provisioned, options)));
      try {
        const kids = await Promise.all(
          apps.map(async (app) => decodeProtectedHeader((await app.register()).accessToken).kid),
        );
        expect(new Set(kids).size).toBe(1);
        const rows = await apps[0]!.db.selectFrom('signing_keys').select('kid').execute();
        expect(rows.map((r) => r.kid).sort()).toEqual([legacy.kid, kids[0]].sort());
      } finally {
        for (const app of apps) await app.close();
        await provisioned.drop();
      }
    });
  },
);
