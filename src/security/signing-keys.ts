import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { withStartupLock, type Db } from '../db/database.js';
import type { SecretBox } from './secret-box.js';
import { ConfigError } from '../config.js';

/**
 * ECDSA P-256: the asymmetric algorithm every common JWT library verifies (`jsonwebtoken` with
 * `jwks-rsa` included, which refuses Ed25519 keys). Keys of another algorithm made by an older
 * version (EdDSA) still verify while they are published, but never sign again.
 */
export const SIGNING_ALGORITHM = 'ES256';
/**
 * A new key is published in the JWKS this long before it signs, so every instance and every
 * verifier caching the JWKS (max-age 300 s) knows it before the first token signed with it arrives.
 */
export const KEY_ACTIVATION_DELAY_MS = 10 * 60_000;
/** A key stops verifying (is deleted) this long after a newer key took over: the access-token life plus slack. */
const KEY_RETIREMENT_DELAY_MS = 20 * 60_000;

export interface SigningKey {
  readonly kid: string;
  /** The JWS `alg` this key signs and verifies with; a token must name the same. */
  readonly algorithm: string;
  readonly createdAt: number;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  readonly publicJwk: JWK;
}

/**
 * Signing keys live in the database (private half sealed with APP_SECRET), so every instance signs
 * and verifies with the same keys. All instances sign with the oldest key of SIGNING_ALGORITHM;
 * several instances that start together may each insert one, and they still agree on which signs.
 *
 * When no key has SIGNING_ALGORITHM (first start, or first start after the move from EdDSA), one
 * is created, and it signs at once: see `activeSigningKey`.
 */
export async function loadSigningKeys(db: Db, box: SecretBox, now: number): Promise<SigningKey[]> {
  const keys = await readKeys(db, box);
  if (keys.some(signsNewTokens)) return keys;
  // One instance creates the key while the others wait, then all read the same one.
  await withStartupLock(db, async (trx) => {
    const existing = await trx
      .selectFrom('signing_keys')
      .select('kid')
      .where('algorithm', '=', SIGNING_ALGORITHM)
      .limit(1)
      .execute();
    if (existing.length === 0) await insertNewKey(trx, box, now);
  });
  return readKeys(db, box);
}

/**
 * The newest SIGNING_ALGORITHM key that has been published long enough; the oldest one while none
 * has. So a routine rotation waits out the activation delay, while the first key of a new algorithm
 * signs at once: the keys it replaces stay published, and a verifier meeting an unknown `kid`
 * fetches the JWKS again (this service within 5 s; `jwks-rsa` and jose's remote key set too),
 * whereas waiting would only prolong the time verifiers that know no other algorithm fail.
 */
export function activeSigningKey(keys: readonly SigningKey[], now: number): SigningKey {
  const key = findActiveKey(keys, now);
  if (key === undefined) throw new Error(`no ${SIGNING_ALGORITHM} signing key`);
  return key;
}

function findActiveKey(keys: readonly SigningKey[], now: number): SigningKey | undefined {
  const candidates = keys.filter(signsNewTokens);
  const published = candidates.filter((k) => k.createdAt <= now - KEY_ACTIVATION_DELAY_MS);
  return published.at(-1) ?? candidates[0];
}

/**
 * Deletes keys that a newer key replaced long enough ago that no token they signed is still valid.
 * Keys of an older algorithm count from the first key of the current one, plus the activation delay
 * (older instances of a rolling upgrade may still sign with them meanwhile).
 */
export async function pruneRetiredKeys(db: Db, box: SecretBox, now: number): Promise<string[]> {
  const keys = await readKeys(db, box);
  const active = findActiveKey(keys, now);
  if (active === undefined) return []; // no key has replaced those there are
  const retiredSince = active.createdAt + KEY_ACTIVATION_DELAY_MS;
  if (now - retiredSince < KEY_RETIREMENT_DELAY_MS) return [];
  const retired = keys.filter((k) => k.createdAt < active.createdAt).map((k) => k.kid);
  if (retired.length > 0) await db.deleteFrom('signing_keys').where('kid', 'in', retired).execute();
  return retired;
}

/** Adds a new SIGNING_ALGORITHM key; returns its `kid`. */
export async function insertNewKey(db: Db, box: SecretBox, now: number): Promise<string> {
  const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
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
  return kid;
}

function signsNewTokens(key: SigningKey): boolean {
  return key.algorithm === SIGNING_ALGORITHM;
}

/** A key's private half; one sealed under another APP_SECRET is an operator's mistake, named so. */
function unseal(box: SecretBox, sealed: string, kid: string): string {
  try {
    return box.open(sealed);
  } catch (error) {
    throw new ConfigError(
      `signing key ${kid} cannot be unsealed: APP_SECRET is not the secret this database's keys ` +
        'were sealed with (on SQLite without APP_SECRET: the data/app-secret file beside it), ' +
        `or the stored key is damaged (${(error as Error).message})`,
      { cause: error },
    );
  }
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
      const privateJwk = JSON.parse(unseal(box, row.sealed_private_jwk, row.kid)) as JWK;
      return {
        kid: row.kid,
        algorithm: row.algorithm,
        createdAt: row.created_at,
        publicJwk,
        publicKey: (await importJWK(publicJwk, row.algorithm)) as CryptoKey,
        privateKey: (await importJWK(privateJwk, row.algorithm)) as CryptoKey,
      };
    }),
  );
}
