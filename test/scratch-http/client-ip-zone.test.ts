import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp } from '../helpers/test-app.js';

/**
 * API.md: "A 5xx never reveals internals" / errors are the client's → 4xx; with TRUST_PROXY=true
 * the client IP is the left-most X-Forwarded-For entry. An IPv6 address with a zone id that Node's
 * isIP accepts (clientIp keeps it) but ipaddr.js cannot parse makes clientNetwork() throw: 500.
 */
describe.each(backends.slice(0, 1))(
  'TRUST_PROXY=true, zoned IPv6 in X-Forwarded-For ($name)',
  (backend) => {
    let t: TestApp;
    beforeAll(async () => {
      t = await TestApp.start(backend, { env: { TRUST_PROXY: 'true' } });
    });
    afterAll(() => t.close());

    it.each(['fe80::1%eth0.5', 'fe80::1%br-0a1b', '::1%-'])(
      'X-Forwarded-For: %s on a public endpoint is not a 500',
      async (forwarded) => {
        const response = await t.post(
          '/api/forgot-password',
          {},
          { ip: randomIp(), headers: { 'x-forwarded-for': forwarded } },
        );
        expect(response.statusCode, response.body).toBe(400);
        expect(response.json().error).toBe('validation_failed');
      },
    );
  },
);
