import { randomBytes, randomUUID } from 'node:crypto';
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type CryptoKey,
  type JWK,
} from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRefreshTokens } from '../../src/security/refresh-tokens.js';
import { createSecretBox } from '../../src/security/secret-box.js';
import { deriveServerKeys } from '../../src/security/server-keys.js';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp, type Account } from '../helpers/test-app.js';

const PUBLIC_URL = 'https://accounts.example.test';
const APP_SECRET = randomBytes(32).toString('base64url');
const DAY = 24 * 3600_000;

/** `text` with its middle character changed (the middle, so it is never a base64 padding bit). */
function flipMiddle(text: string, from = 0): string {
  const at = from + Math.floor((text.length - from) / 2);
  return `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
}

describe.each(backends)('access and refresh tokens ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    // A trailing slash in PUBLIC_URL is dropped: iss and aud are exactly PUBLIC_URL without it.
    t = await TestApp.start(backend, { env: { PUBLIC_URL: `${PUBLIC_URL}/`, APP_SECRET } });
  });
  afterAll(() => t.close());

  const sessionsWith = (token: string) => t.call('GET', '/api/sessions', { token });
  const sessionsWithHeader = (authorization: string) =>
    t.call('GET', '/api/sessions', { headers: { authorization } });
  const refresh = (refreshToken: string) =>
    t.post('/api/refresh-token', { refresh_token: refreshToken }, { ip: randomIp() });

  function expectUnauthorized(response: Awaited<ReturnType<typeof sessionsWith>>): void {
    expect(response.statusCode).toBe(401);
    expect(response.json().error).toBe('unauthorized');
    expect(response.headers['www-authenticate']).toBe('Bearer');
  }

  function expectInvalidRefresh(response: Awaited<ReturnType<typeof refresh>>): void {
    expect(response.statusCode).toBe(401);
    expect(response.json().error).toBe('invalid_refresh_token');
  }

  /** The service's own signing key, unsealed with the configured APP_SECRET (to forge one claim at a time). */
  async function serverKey(): Promise<{ kid: string; key: CryptoKey }> {
    const box = createSecretBox(deriveServerKeys(APP_SECRET).secretBox);
    const row = await t.db
      .selectFrom('signing_keys')
      .selectAll()
      .orderBy('created_at')
      .orderBy('kid')
      .executeTakeFirstOrThrow();
    const jwk = JSON.parse(box.open(row.sealed_private_jwk)) as JWK;
    return { kid: row.kid, key: (await importJWK(jwk, 'ES256')) as CryptoKey };
  }

  /**
   * A token like the service's for `account`, with `changes` applied to header or claims
   * (`exp: false` leaves exp out).
   */
  async function forge(
    account: Account,
    key: { kid: string; key: CryptoKey },
    changes: { typ?: string; iss?: string; aud?: string; exp?: false } = {},
  ): Promise<string> {
    const claims = decodeJwt(account.accessToken);
    const now = Math.floor(t.clock.now() / 1000); // the service's time, which tests skip forward
    const jwt = new SignJWT({ sid: claims.sid })
      .setProtectedHeader({ alg: 'ES256', typ: changes.typ ?? 'at+jwt', kid: key.kid })
      .setSubject(claims.sub as string)
      .setIssuer(changes.iss ?? PUBLIC_URL)
      .setAudience(changes.aud ?? PUBLIC_URL)
      .setIssuedAt(now);
    if (changes.exp !== false) jwt.setExpirationTime(now + 600);
    return jwt.sign(key.key);
  }

  describe('access token', () => {
    it('has header alg ES256, typ "at+jwt" and a kid', async () => {
      const account = await t.register();
      const header = decodeProtectedHeader(account.accessToken);
      expect(header.alg).toBe('ES256');
      expect(header.typ).toBe('at+jwt');
      expect(header.kid).toEqual(expect.any(String));
    });

    it('carries sub, sid, iat, exp (15 minutes later), and iss and aud exactly PUBLIC_URL', async () => {
      const account = await t.register();
      const claims = decodeJwt(account.accessToken);
      expect(claims.sub).toBe(account.userId);
      expect(claims.sid).toEqual(expect.any(String));
      expect(claims.iss).toBe(PUBLIC_URL);
      expect(claims.aud).toBe(PUBLIC_URL); // a string, not an array
      expect(Number.isInteger(claims.iat)).toBe(true);
      expect((claims.exp as number) - (claims.iat as number)).toBe(900);
    });

    it('verifies with the public keys of GET /.well-known/jwks.json', async () => {
      const account = await t.register();
      const jwksResponse = await t.call('GET', '/.well-known/jwks.json');
      expect(jwksResponse.statusCode).toBe(200);
      const jwks = jwksResponse.json() as { keys: JWK[] };
      for (const key of jwks.keys) expect(key).not.toHaveProperty('d');
      const { payload, protectedHeader } = await jwtVerify(
        account.accessToken,
        createLocalJWKSet(jwks),
        {
          algorithms: ['ES256'],
          typ: 'at+jwt',
          issuer: PUBLIC_URL,
          audience: PUBLIC_URL,
          currentDate: new Date(t.clock.now()),
        },
      );
      expect(payload.sub).toBe(account.userId);
      expect(jwks.keys.map((k) => k.kid)).toContain(protectedHeader.kid);
    });

    it('has sid equal to the id of the current session in GET /api/sessions', async () => {
      const account = await t.register();
      const response = await sessionsWith(account.accessToken);
      expect(response.statusCode).toBe(200);
      const current = response.json().sessions.filter((s: { current: boolean }) => s.current);
      expect(current).toHaveLength(1);
      expect(decodeJwt(account.accessToken).sid).toBe(current[0].id);
    });

    it('is rejected with 401 {"error":"unauthorized"} and WWW-Authenticate: Bearer once expired', async () => {
      const account = await t.register();
      t.clock.advance(14 * 60_000);
      expect((await sessionsWith(account.accessToken)).statusCode).toBe(200);
      t.clock.advance(60_000 + 1000);
      expectUnauthorized(await sessionsWith(account.accessToken));
    });

    it('is rejected with 401 when its signature is tampered with', async () => {
      const account = await t.register();
      const token = account.accessToken;
      const tampered = flipMiddle(token, token.lastIndexOf('.') + 1);
      expect((await sessionsWith(token)).statusCode).toBe(200);
      expectUnauthorized(await sessionsWith(tampered));
    });

    it('is rejected with 401 when its claims are changed under the original signature', async () => {
      const account = await t.register();
      const other = await t.register();
      const [header, , signature] = account.accessToken.split('.');
      const claims = { ...decodeJwt(account.accessToken), sub: other.userId };
      const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
      expectUnauthorized(await sessionsWith(`${header}.${payload}.${signature}`));
    });

    it('is rejected with 401 for alg "none"', async () => {
      const account = await t.register();
      const header = decodeProtectedHeader(account.accessToken);
      const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const unsigned = `${encode({ ...header, alg: 'none' })}.${encode(decodeJwt(account.accessToken))}.`;
      expectUnauthorized(await sessionsWith(unsigned));
    });

    it('is rejected with 401 when signed by another key (same kid or another)', async () => {
      const account = await t.register();
      const { privateKey } = await generateKeyPair('ES256');
      const kid = decodeProtectedHeader(account.accessToken).kid as string;
      expectUnauthorized(await sessionsWith(await forge(account, { kid, key: privateKey })));
      expectUnauthorized(
        await sessionsWith(await forge(account, { kid: randomUUID(), key: privateKey })),
      );
    });

    it('is rejected with 401 when typ is not at+jwt, or iss or aud is not PUBLIC_URL', async () => {
      const account = await t.register();
      const key = await serverKey();
      // Control: the same forging with nothing changed is accepted, so each rejection is the claim's.
      expect((await sessionsWith(await forge(account, key))).statusCode).toBe(200);
      expectUnauthorized(await sessionsWith(await forge(account, key, { typ: 'JWT' })));
      expectUnauthorized(
        await sessionsWith(await forge(account, key, { iss: 'https://evil.example.test' })),
      );
      expectUnauthorized(
        await sessionsWith(await forge(account, key, { aud: 'https://other.example.test' })),
      );
    });

    // API.md "Tokens": "verification pins the algorithm and checks `typ`, `iss`, `aud`, `exp`".
    it('is rejected with 401 when it has no exp, even signed by the service key', async () => {
      const account = await t.register();
      const key = await serverKey();
      // Control: the same forging with exp is accepted, so the refusal is exp's.
      expect((await sessionsWith(await forge(account, key))).statusCode).toBe(200);
      expectUnauthorized(await sessionsWith(await forge(account, key, { exp: false })));
    });

    it('is required: a missing Authorization header gets 401', async () => {
      expectUnauthorized(await t.call('GET', '/api/sessions'));
    });

    it.each([
      ['a bare token without "Bearer"', (token: string) => token],
      ['"Bearer" with no token', () => 'Bearer'],
      ['"Bearer " with an empty token', () => 'Bearer '],
      ['another scheme', (token: string) => `Basic ${token}`],
      ['a token that is not a JWT', () => 'Bearer not-a-jwt'],
      ['two tokens', (token: string) => `Bearer ${token} ${token}`],
    ])('rejects a malformed Authorization header with 401: %s', async (_, header) => {
      const account = await t.register();
      expectUnauthorized(await sessionsWithHeader(header(account.accessToken)));
    });
  });

  describe('refresh token', () => {
    it('answers 200 {message:"Token refreshed", ...token response} with new, working tokens', async () => {
      const account = await t.register();
      const response = await refresh(account.refreshToken);
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(Object.keys(body).sort()).toEqual([
        'access_token',
        'expires_in',
        'message',
        'refresh_token',
        'token_type',
      ]);
      expect(body).toMatchObject({
        message: 'Token refreshed',
        token_type: 'Bearer',
        expires_in: 900,
      });
      expect(body.refresh_token).not.toBe(account.refreshToken);
      expect(decodeJwt(body.access_token).sid).toBe(decodeJwt(account.accessToken).sid);
      expect((await sessionsWith(body.access_token)).statusCode).toBe(200);
      expect((await refresh(body.refresh_token)).statusCode).toBe(200);
    });

    it('revokes the whole session when an already-rotated token is presented more than 10 s after its rotation', async () => {
      const account = await t.register();
      const rotated = (await refresh(account.refreshToken)).json();
      t.clock.advance(11_000);

      expectInvalidRefresh(await refresh(account.refreshToken));
      // The session is gone: its current refresh token and its access tokens no longer work.
      expectInvalidRefresh(await refresh(rotated.refresh_token));
      expectUnauthorized(await sessionsWith(rotated.access_token));
      expectUnauthorized(await sessionsWith(account.accessToken));
    });

    it('within 10 s of its rotation answers 200 with the refresh token that rotation issued', async () => {
      const account = await t.register();
      const first = await refresh(account.refreshToken);
      expect(first.statusCode).toBe(200);
      t.clock.advance(5_000);

      const replay = await refresh(account.refreshToken);
      expect(replay.statusCode).toBe(200);
      expect(replay.json().message).toBe('Token refreshed');
      expect(replay.json().refresh_token).toBe(first.json().refresh_token);
      expect((await sessionsWith(replay.json().access_token)).statusCode).toBe(200);
      // Still one valid refresh token: the one the rotation issued.
      expect((await refresh(first.json().refresh_token)).statusCode).toBe(200);
    });

    it('gives the grace answer to a token rotated twice within 10 s, and revokes once 10 s have passed', async () => {
      const account = await t.register();
      const first = (await refresh(account.refreshToken)).json().refresh_token as string;
      t.clock.advance(2_000);
      const second = (await refresh(first)).json().refresh_token as string;
      t.clock.advance(1_000);

      // Tab B still holds the login token, rotated 3 s ago (and its successor 1 s ago).
      const replay = await refresh(account.refreshToken);
      expect(replay.statusCode).toBe(200);
      expect(replay.json().refresh_token).toBe(second);

      t.clock.advance(8_000); // the login token's rotation is now 11 s old
      expect((await refresh(account.refreshToken)).statusCode).toBe(401);
      expect((await refresh(second)).statusCode).toBe(401); // the session was revoked
    });

    it('answers two concurrent refreshes with the same token both 200 with the same refresh token', async () => {
      const account = await t.register();
      const [a, b] = await Promise.all([
        refresh(account.refreshToken),
        refresh(account.refreshToken),
      ]);
      expect(a.statusCode).toBe(200);
      expect(b.statusCode).toBe(200);
      expect(a.json().refresh_token).toBe(b.json().refresh_token);
      expect((await refresh(a.json().refresh_token)).statusCode).toBe(200);
    });

    it('ends the session 30 days after login even if refreshed', async () => {
      const account = await t.register();
      t.clock.advance(30 * DAY - 1_000);
      const refreshed = await refresh(account.refreshToken);
      expect(refreshed.statusCode).toBe(200);
      t.clock.advance(1_001); // 30 days and a millisecond after login
      expectInvalidRefresh(await refresh(refreshed.json().refresh_token));
    });

    // API.md "Tokens": "`refresh_token`: opaque, at least 256 random bits". A token is its session's
    // id, generation and a MAC over the session's random seed: the seed carries those bits.
    it("draws each session's seed from at least 256 random bits", () => {
      const tokens = createRefreshTokens(randomBytes(32));
      const seeds = Array.from({ length: 1_000 }, () => tokens.newSeed());
      expect(seeds.every((seed) => /^[0-9a-f]{64,}$/.test(seed))).toBe(true);
      expect(new Set(seeds).size).toBe(seeds.length);
    });

    it('rejects garbage and wrong-MAC refresh tokens with 401 invalid_refresh_token without revoking the session', async () => {
      const account = await t.register();
      const current = (await refresh(account.refreshToken)).json().refresh_token as string;
      t.clock.advance(11_000); // past the grace: a replay of an authentic old token would revoke
      const sid = decodeJwt(account.accessToken).sid as string;
      const forgedMac = randomBytes(32).toString('base64url');
      const parts = current.split('.');
      for (const forged of [
        'garbage',
        randomBytes(48).toString('base64url'),
        `${sid}.0.${forgedMac}`, // the rotated-away generation, with a forged MAC
        [...parts.slice(0, -1), forgedMac].join('.'), // the current generation, forged MAC
        flipMiddle(current, current.lastIndexOf('.') + 1), // one character of the MAC changed
        [parts[0], `0${parts[1]}`, parts[2]].join('.'), // the current token, another spelling
      ]) {
        expectInvalidRefresh(await refresh(forged));
      }
      const still = await refresh(current);
      expect(still.statusCode).toBe(200);
    });

    it('rejects a refresh token of any length with 401 invalid_refresh_token, a long one too', async () => {
      const account = await t.register();
      for (const invalid of ['', 'a'.repeat(513), `${account.refreshToken}${'x'.repeat(600)}`])
        expectInvalidRefresh(await refresh(invalid));
      expect((await refresh(account.refreshToken)).statusCode).toBe(200);
    });
  });
});
