import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { markEmailConfirmed } from '../../src/accounts/users.store.js';
import type { TestApp, Account } from '../helpers/test-app.js';

/** A handle no other test uses. */
export function uniqueHandle(prefix = 'h'): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/** A registered account whose address is confirmed (the confirmation flow has its own tests). */
export async function confirmedAccount(t: TestApp): Promise<Account> {
  const account = await t.register();
  await markEmailConfirmed(t.db, account.userId, t.clock.now());
  return account;
}

export interface Creator {
  readonly account: Account;
  readonly id: string;
  readonly handle: string;
}

/** A confirmed account with an influencer profile created through the API. */
export async function creator(t: TestApp, fields: Record<string, unknown> = {}): Promise<Creator> {
  const account = await confirmedAccount(t);
  const handle = (fields.handle as string | undefined) ?? uniqueHandle('c');
  const response = await t.post(
    '/api/influencers',
    { handle, display_name: 'A Creator', categories: ['music'], ...fields },
    { token: account.accessToken },
  );
  if (response.statusCode !== 201) throw new Error(`create failed: ${response.body}`);
  return { account, id: account.userId, handle: handle.toLowerCase() };
}

/** A 400 validation_failed whose details name `field`. */
export function expectInvalid(response: LightMyRequestResponse, field: string): void {
  expect(response.statusCode, response.body).toBe(400);
  const body = response.json();
  expect(body.error).toBe('validation_failed');
  expect(body.details.map((d: { field: string }) => d.field)).toContain(field);
}

/** An error answer with this status and code (and the catalogue's shape). */
export function expectError(response: LightMyRequestResponse, status: number, code: string) {
  expect(response.statusCode, response.body).toBe(status);
  const body = response.json();
  expect(body.error).toBe(code);
  expect(typeof body.message).toBe('string');
  return body;
}

/** PUT /api/influencers/{ref}/follow as `account`. */
export function follow(t: TestApp, account: Account, ref: string) {
  return t.call('PUT', `/api/influencers/${ref}/follow`, { token: account.accessToken });
}

/** Whether the account has an influencer profile row, read straight from the database. */
export async function hasProfileRow(t: TestApp, userId: string): Promise<boolean> {
  const row = await t.db
    .selectFrom('influencer_profiles')
    .select('id')
    .where('id', '=', userId)
    .executeTakeFirst();
  return row !== undefined;
}
