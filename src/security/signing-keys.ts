import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { withStartupLock, type Db } from '../db/database.js';
import type { SecretBox } from './secret-box.js';

export const SIGNING_ALGORITHM = 'EdDSA';
/**
 * A new key is published in the JWKS this long before it signs, so every instance and every
 * verifier caching the JWKS (max-age 300 s) knows it before the first token signed with it arrives.
 */
export const KEY_ACTIVATION_DELAY_MS = 10 * 60_000;
/** A key stops verifying (is deleted) this long after a newer key took over: the access-token life plus slack. */
export const KEY_RETIREMENT_DELAY_MS = 20 * 60_000;

export interface SigningKey {
  readonly kid: string;
  readonly createdAt: number;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  readonly publicJwk: JWK;
}

/**
 * Signing keys live in the database (private half sealed with APP_SECRET), so every instance signs
 * and verifies with the same keys. All instances sign with the oldest key; several instances that
 * start together on an empty database may each insert one, and they still agree on which signs.
 */
export async function loadSigningKeys(db: Db, box: SecretBox, now: number): Promise<SigningKey[]> {
  const keys = await readKeys(db, box);
  if (keys.length > 0) return keys;
  // First start: one instance creates the key while the others wait, then all read the same one.
  await withStartupLock(db, async (trx) => {
    const existing = await trx.selectFrom('signing_keys').select('kid').limit(1).execute();
    if (existing.length === 0) await insertNewKey(trx, box, now);
  });
  return readKeys(db, box);
}

/** The newest key that has been published long enough; the oldest key while none has. */
export function activeSigningKey(keys: readonly SigningKey[], now: number): SigningKey {
  const published = keys.filter((k) => k.createdAt <= now - KEY_ACTIVATION_DELAY_MS);
  const key = published.at(-1) ?? keys[0];
  if (key === undefined) throw new Error('no signing key');
  return key;
}

/** Deletes keys that a newer key replaced long enough ago that no token they signed is still valid. */
export async function pruneRetiredKeys(db: Db, box: SecretBox, now: number): Promise<string[]> {
  const keys = await readKeys(db, box);
  const active = activeSigningKey(keys, now);
  const retiredSince = active.createdAt + KEY_ACTIVATION_DELAY_MS;
  if (now - retiredSince < KEY_RETIREMENT_DELAY_MS) return [];
  const retired = keys.filter((k) => k.createdAt < active.createdAt).map((k) => k.kid);
  if (retired.length > 0) await db.deleteFrom('signing_keys').where('kid', 'in', retired).execute();
  return retired;
}

export async function insertNewKey(db: Db, box: SecretBox, now: number): Promise<void> {
  const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALGORITHM, {
    crv: 'Ed25519',
    extractable: true,
  });
  const kid = randomUUID();
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: SIGNING_ALGORITHM, use: 'sig' };
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALGORITHM };
  await db
    .insertInto('signing_keys')
    .values({
      kid,
      algorithm: SIGNING_ALGORITHM,
      public_jwk: JSON.stringify(publicJwk),
      sealed_private_jwk: box.seal(JSON.stringify(privateJwk)),
      created_at: now,
    })
    .execute();
}

async function readKeys(db: Db, box: SecretBox): Promise<SigningKey[]> {
  const rows = await db
    .selectFrom('signing_keys')
    .selectAll()
    .orderBy('created_at')
    .orderBy('kid')
    .execute();
  return Promise.all(
    rows.map(async (row) => {
      const publicJwk = JSON.parse(row.public_jwk) as JWK;
      const privateJwk = JSON.parse(box.open(row.sealed_private_jwk)) as JWK;
      return {
        kid: row.kid,
        createdAt: row.created_at,
        publicJwk,
        publicKey: (await importJWK(publicJwk, row.algorithm)) as CryptoKey,
        privateKey: (await importJWK(privateJwk, row.algorithm)) as CryptoKey,
      };
    }),
  );
}
