import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planCodeMail } from '../../src/auth/code-requests.js';
import type { ServiceContext } from '../../src/context.js';
import type { QueuedCodeRequest } from '../../src/mail/outbox.js';
import { createCodeHasher, generateCode } from '../../src/security/one-time-codes.js';
import { backends } from '../helpers/backends.js';
import { TestApp, type Account } from '../helpers/test-app.js';

/**
 * The outbox worker's side of "one code e-mail per address and purpose per 60 s", as two
 * instances' workers would run it: each plans its request, then composes (issues the code) later.
 * The rule must hold in the write itself, not only in a read before it.
 */
describe.each(backends)('code requests planned by two workers at once ($name)', (backend) => {
  let t: TestApp;
  let ctx: ServiceContext;
  beforeAll(async () => {
    t = await TestApp.start(backend);
    // Only what planning and issuing use: the database, the clock, the code hasher.
    ctx = {
      db: t.db,
      clock: t.clock.now,
      codeHasher: createCodeHasher(Buffer.alloc(32, 7)),
    } as Partial<ServiceContext> as ServiceContext;
  });
  afterAll(() => t.close());

  const storedRequestTime = async (account: Account) =>
    Number(
      (
        await t.db
          .selectFrom('one_time_codes')
          .select('created_at')
          .where('user_id', '=', account.userId)
          .where('purpose', '=', 'reset_password')
          .executeTakeFirstOrThrow()
      ).created_at,
    );

  const plan = async (account: Account, requestedAt: number, retry = false) => {
    const request: QueuedCodeRequest = {
      address: account.email,
      purpose: 'reset_password',
      requestedAt,
      retry,
    };
    const compose = await planCodeMail(ctx, request);
    if (compose === undefined) throw new Error('dropped at planning');
    return compose;
  };

  it('two requests 10 s apart, both planned before either is composed: one code goes out', async () => {
    const account = await t.register();
    const at = t.clock.now();
    const [older, newer] = [await plan(account, at), await plan(account, at + 10_000)];
    const mails = [await newer(), await older()];
    expect(mails.map((mail) => mail !== undefined)).toEqual([true, false]);
    expect(await storedRequestTime(account)).toBe(at + 10_000);
  });

  it('a retry after a failed send issues its own code again; another request of that instant does not', async () => {
    const account = await t.register();
    const at = t.clock.now();
    expect(await (await plan(account, at))()).toBeDefined(); // its send then failed
    expect(await (await plan(account, at, true))()).toBeDefined();
    expect(await (await plan(account, at))()).toBeUndefined(); // not a retry: another request
    expect(await storedRequestTime(account)).toBe(at);
  });

  it("a retry planned before a newer request's code was issued does not void it", async () => {
    const account = await t.register();
    const at = t.clock.now();
    expect(await (await plan(account, at))()).toBeDefined(); // R1: its send then failed
    const retry = await plan(account, at, true);
    const newer = await plan(account, at + 61_000);
    expect(await newer()).toBeDefined();
    expect(await retry()).toBeUndefined();
    expect(await storedRequestTime(account)).toBe(at + 61_000);
  });

  // API.md "Values": "confirmation / reset code: 6 decimal digits from a CSPRNG".
  it('issues codes of 6 decimal digits drawn over the whole range 000000–999999', () => {
    const codes = Array.from({ length: 5_000 }, () => generateCode());
    expect(codes.every((code) => /^\d{6}$/.test(code))).toBe(true);
    // 5,000 draws from a million values repeat about a dozen times; from fewer, far more often.
    expect(new Set(codes).size).toBeGreaterThan(4_900);
    // Every leading digit shows up (each ~500 times): the first digits are random too.
    expect(new Set(codes.map((code) => code[0])).size).toBe(10);
  });
});
