import jwt from 'jsonwebtoken';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import jwksClient from 'jwks-rsa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';

const PUBLIC_URL = 'https://accounts.example.test';

/** What another service does with `jsonwebtoken` + `jwks-rsa`, the most used way in Node. */
function verifyWithJsonwebtoken(token: string, jwksUri: string): Promise<jwt.JwtPayload> {
  const client = jwksClient({ jwksUri, cache: false });
  const getKey: jwt.GetPublicKeyOrSecret = (header, callback) => {
    client.getSigningKey(header.kid).then(
      (key) => callback(null, key.getPublicKey()),
      (error: Error) => callback(error),
    );
  };
  const options = { algorithms: ['ES256' as const], issuer: PUBLIC_URL, audience: PUBLIC_URL };
  return new Promise((resolve, reject) => {
    jwt.verify(token, getKey, options, (error, payload) => {
      if (error !== null || payload === undefined || typeof payload === 'string') reject(error);
      else resolve(payload);
    });
  });
}

describe.each(backends)('access tokens in other JWT libraries ($name)', (backend) => {
  let t: TestApp;
  let jwksUri: string;
  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { PUBLIC_URL } });
    jwksUri = `${await t.listen()}/.well-known/jwks.json`;
  });
  afterAll(() => t.close());

  it('verify with jsonwebtoken + jwks-rsa (ES256, iss and aud pinned), JWKS fetched over HTTP', async () => {
    const account = await t.register();
    const payload = await verifyWithJsonwebtoken(account.accessToken, jwksUri);
    expect(payload).toMatchObject({ sub: account.userId, iss: PUBLIC_URL, aud: PUBLIC_URL });
    await expect(
      verifyWithJsonwebtoken(account.accessToken.replace(/.{4}$/, 'AAAA'), jwksUri),
    ).rejects.toThrow(/invalid signature/);
  });

  it("verify with jose's remote JWK set (ES256, typ, iss and aud pinned)", async () => {
    const account = await t.register();
    const { payload, protectedHeader } = await jwtVerify(
      account.accessToken,
      createRemoteJWKSet(new URL(jwksUri)),
      { algorithms: ['ES256'], typ: 'at+jwt', issuer: PUBLIC_URL, audience: PUBLIC_URL },
    );
    expect(payload.sub).toBe(account.userId);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    expect(decodeProtectedHeader(account.accessToken).kid).toEqual(expect.any(String));
  });
});
