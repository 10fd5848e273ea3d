import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPasswordPolicy,
  loadCommonPasswords,
  normalizePassword,
} from '../../src/security/password-policy.js';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp, uniqueEmail } from '../helpers/test-app.js';

const EMAIL = 'jane.doe@example.test';
const policy = createPasswordPolicy(8);
const problemsOf = (password: string, minLength = 8) =>
  createPasswordPolicy(minLength).problems(password, EMAIL, 'password');

describe('the shipped common-password list', () => {
  const text = readFileSync(
    new URL('../../src/security/common-passwords.txt', import.meta.url),
    'utf8',
  );

  it('has at least 10,000 entries', () => {
    expect(loadCommonPasswords().size).toBeGreaterThanOrEqual(10_000);
  });

  it('is NFC, lower-cased and sorted, as the bisection search needs', () => {
    const list = loadCommonPasswords();
    for (let i = 1; i < list.size; i++) {
      const entry = list.entry(i);
      expect(entry > list.entry(i - 1), `entry ${i} out of order`).toBe(true);
      if (entry !== entry.normalize('NFC').toLowerCase())
        throw new Error(`entry ${i} not normalized`);
    }
    expect(list.has(list.entry(0))).toBe(true);
    expect(list.has(list.entry(list.size - 1))).toBe(true);
    expect(list.has('password123')).toBe(true);
    expect(list.has('plum-tractor-47-lagoon')).toBe(false);
  });

  it('names its source on its first line', () => {
    const firstLine = text.split('\n')[0]!;
    expect(firstLine).toMatch(/^# Source: \S.{10,}/);
    expect(loadCommonPasswords().has(firstLine.toLowerCase())).toBe(false);
  });
});

describe('createPasswordPolicy (API.md "Values": password)', () => {
  it('accepts a password that breaks no rule', () => {
    expect(policy.problems('plum-Tractor-47-lagoon', EMAIL, 'password')).toEqual([]);
  });

  it('reports problems on the given field', () => {
    const problems = policy.problems('Zq7-abc', EMAIL, 'new_password');
    expect(problems).toEqual([{ field: 'new_password', message: expect.any(String) }]);
  });

  describe('"8 to 128 Unicode code points (counted after NFC)"', () => {
    it('counts an emoji once: 8 emoji pass, 7 do not', () => {
      expect(problemsOf('🦊🌵🚲🎻🍉🪐🧭🐙')).toEqual([]);
      expect(problemsOf('🦊🌵🚲🎻🍉🪐🧭')).toHaveLength(1);
    });

    it('counts after NFC: 7 decomposed "é" (14 code points) are too short, 8 pass', () => {
      expect(problemsOf('e\u0301'.repeat(7))).toHaveLength(1);
      expect(problemsOf('ae\u0301ie\u0301oe\u0301ue\u0301')).toEqual([]);
    });

    it('allows 128 code points and refuses 129', () => {
      expect(problemsOf('Zq7'.repeat(42) + 'Zq')).toEqual([]);
      expect(problemsOf('Zq7'.repeat(43))).toHaveLength(1);
    });

    it('counts the maximum in code points after NFC: 128 emoji or 128 decomposed "é" pass', () => {
      expect(problemsOf('🦊🌵🚲🎻'.repeat(32))).toEqual([]);
      expect(problemsOf('e\u0301'.repeat(128))).toEqual([]);
      expect(problemsOf('🦊🌵🚲🎻'.repeat(32) + '🐙')).toHaveLength(1);
    });

    it('PASSWORD_MIN_LENGTH raises the minimum: createPasswordPolicy(15)', () => {
      expect(problemsOf('plum-Tractor-4', 15)).toHaveLength(1);
      expect(problemsOf('plum-Tractor', 15)).toHaveLength(1);
      expect(problemsOf('plum-Tractor-47', 15)).toEqual([]);
    });
  });

  describe('"in a list of at least 10,000 common/breached passwords"', () => {
    it.each(['password123', 'iloveyou12', '1234567890qwertyuiop'])('rejects %s', (common) => {
      expect(problemsOf(common)).toHaveLength(1);
    });

    it.each(['PASSWORD123', 'PaSsWoRd123', 'ILoveYou12'])(
      'rejects %s (case-insensitively)',
      (common) => {
        expect(problemsOf(common)).toHaveLength(1);
      },
    );
  });

  it('rejects the e-mail address and its local part', () => {
    expect(problemsOf(EMAIL)).toHaveLength(1);
    expect(problemsOf('jane.doe')).toHaveLength(1);
  });

  it.each([
    ['one repeated letter', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'],
    ['lower-case words with spaces', 'correct horse battery staple'],
    ['lower-case letters only', 'lilacmorningtrainride'],
    ['digits only', '73920184657392'],
  ])('has no composition rules: %s passes', (_kind, password) => {
    expect(problemsOf(password)).toEqual([]);
  });

  it('reports every broken rule', () => {
    expect(createPasswordPolicy(15).problems('password123', EMAIL, 'password')).toHaveLength(2);
  });

  it('normalizePassword gives NFC and never truncates or case-folds', () => {
    expect(normalizePassword('Cafe\u0301')).toBe('Caf\u00e9');
    const long = 'Zq7'.repeat(100);
    expect(normalizePassword(long)).toBe(long);
  });
});

describe.each(backends)('PASSWORD_MIN_LENGTH over HTTP ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { PASSWORD_MIN_LENGTH: '15' } });
  });
  afterAll(() => t.close());

  it('with PASSWORD_MIN_LENGTH=15, registering with a 12-character password is 400 weak_password', async () => {
    const email = uniqueEmail();
    const response = await t.post(
      '/api/register',
      { email, password: 'plum-Tractor' },
      { ip: randomIp() },
    );
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      message: expect.any(String),
      error: 'weak_password',
      details: [{ field: 'password', message: expect.any(String) }],
    });
    const stored = await t.db
      .selectFrom('users')
      .select('id')
      .where('email_normalized', '=', email.toLowerCase())
      .execute();
    expect(stored).toEqual([]);
  });

  it('with PASSWORD_MIN_LENGTH=15, a 15-character password registers', async () => {
    const response = await t.post(
      '/api/register',
      { email: uniqueEmail(), password: 'plum-Tractor-47' },
      { ip: randomIp() },
    );
    expect(response.statusCode).toBe(201);
  });
});
