// How an error answer becomes an ApiError: Retry-After in either of HTTP's two forms.
import { describe, expect, it } from 'vitest';
import {
  ApiError,
  errorOf,
  secondsToWait,
  UnexpectedResponseError,
} from '../../client/src/errors.js';

const NOW = Date.parse('2026-11-28T12:00:00Z');

describe('Retry-After', () => {
  it('reads the seconds the service sends', () => {
    expect(secondsToWait('42', NOW)).toBe(42);
    expect(secondsToWait(' 0 ', NOW)).toBe(0);
  });

  it('turns a proxy’s HTTP date into seconds from now, rounded up, never negative', () => {
    expect(secondsToWait('Sat, 28 Nov 2026 12:00:30 GMT', NOW)).toBe(30);
    expect(secondsToWait('Saturday, 28-Nov-26 12:01:00 GMT', NOW)).toBe(60);
    expect(secondsToWait('Sat Nov 28 12:00:01 2026', NOW - 500)).toBe(2);
    expect(secondsToWait('Sat, 28 Nov 2026 11:00:00 GMT', NOW)).toBe(0);
  });

  it('gives no advice for anything else', () => {
    for (const header of [null, '', 'soon', '1.5', '-3', '1e3'])
      expect(secondsToWait(header, NOW)).toBeUndefined();
  });

  it('is carried by the ApiError of a 429 or 503', async () => {
    const body = { error: 'rate_limited', message: 'Too many requests.' };
    const date = new Date(Date.now() + 10_000).toUTCString();
    for (const [header, expected] of [
      ['7', 7],
      [date, 10],
    ] as const) {
      const response = Response.json(body, { status: 429, headers: { 'Retry-After': header } });
      const error = errorOf(response, await response.clone().json());
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).retryAfter).toBeGreaterThanOrEqual(expected - 1);
      expect((error as ApiError).retryAfter).toBeLessThanOrEqual(expected);
    }
  });

  it('is carried by the UnexpectedResponseError of a gateway’s 429, whose body is not the service’s', () => {
    const response = new Response('<html>429 Too Many Requests</html>', {
      status: 429,
      headers: { 'content-type': 'text/html', 'retry-after': '30' },
    });
    const error = errorOf(response, '<html>429 Too Many Requests</html>');
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error.retryAfter).toBe(30);
  });
});
