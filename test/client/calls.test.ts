import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountClient } from '../../client/src/index.js';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, uniqueEmail, type TestApp } from '../helpers/test-app.js';
import { apiErrorOf, clientOn, Device, REFRESH, registered, startService } from './service.js';

describe.each(backends)('the client against the running service ($name)', (backend) => {
  let t: TestApp;
  let baseUrl: string;
  beforeAll(async () => ({ t, baseUrl } = await startService(backend)));
  afterAll(() => t.close());

  /** A client whose account has a confirmed address (needed for an influencer profile). */
  async function confirmed(): Promise<{ client: AccountClient; email: string }> {
    const account = await registered(baseUrl);
    const code = await t.codeFor(account.email);
    await account.client.POST('/api/confirm-email', { body: { email: account.email, code } });
    return account;
  }

  it('registers, logs in, reads and updates the profile (null fields come back as null)', async () => {
    const client = clientOn(baseUrl);
    const email = uniqueEmail('client');
    const created = await client.register({ email, password: STRONG_PASSWORD });
    expect(created).toMatchObject({ message: 'User registered', token_type: 'Bearer' });
    expect(await client.tokens()).toMatchObject({ refreshToken: created.refresh_token });

    const other = clientOn(baseUrl);
    const { user } = await other.login({ email, password: STRONG_PASSWORD });
    expect(user).toMatchObject({ email, email_confirmed: false, name: null, bio: null });

    const updated = await other.PATCH('/api/profile', { body: { name: 'Ada', bio: null } });
    expect(updated).toMatchObject({ message: 'Profile updated', user: { name: 'Ada', bio: null } });
    expect((await client.GET('/api/profile')).user.name).toBe('Ada');
    const { sessions } = await client.GET('/api/sessions');
    expect(sessions.filter((session) => session.current)).toHaveLength(1);
  });

  it('creates an influencer profile, finds it in the directory, follows and unfollows it', async () => {
    const star = await confirmed();
    const handle = `client_${Date.now().toString(36)}`;
    const body = { handle, display_name: 'Client Star', categories: ['tech' as const] };
    const { influencer } = await star.client.POST('/api/influencers', { body });
    expect(influencer).toMatchObject({ handle, bio: null, links: [], followers_count: 0 });

    const fan = (await registered(baseUrl)).client;
    const page = await fan.GET('/api/influencers', {
      params: { query: { q: handle, limit: '5' } },
    });
    expect(page.influencers.map((found) => found.id)).toEqual([influencer.id]);
    expect(page.next_cursor).toBeNull();

    const ref = { params: { path: { ref: handle } } };
    expect(await fan.PUT('/api/influencers/{ref}/follow', ref)).toEqual({
      following: true,
      followers_count: 1,
    });
    expect((await fan.GET('/api/influencers/{ref}', ref)).influencer.is_following).toBe(true);
    const anonymous = clientOn(baseUrl);
    expect((await anonymous.GET('/api/influencers/{ref}', ref)).influencer).not.toHaveProperty(
      'is_following',
    );
    const { influencers } = await fan.GET('/api/influencers/following');
    expect(influencers.map((followed) => followed.handle)).toEqual([handle]);
    expect(await fan.DELETE('/api/influencers/{ref}/follow', ref)).toEqual({
      following: false,
      followers_count: 0,
    });
  });

  it('surfaces error answers as ApiError {status, error, message, details, requestId}', async () => {
    const { client, email } = await registered(baseUrl);

    const wrong = await apiErrorOf(client.login({ email, password: 'not-the-password-1' }));
    expect(wrong).toMatchObject({ status: 401, error: 'invalid_credentials', details: [] });
    expect(wrong.message).toMatch(/\w/);
    expect(wrong.requestId).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );

    const weak = await apiErrorOf(
      clientOn(baseUrl).register({ email: uniqueEmail(), password: 'password' }),
    );
    expect(weak).toMatchObject({ status: 400, error: 'weak_password' });
    expect(weak.details.map((problem) => problem.field)).toEqual(['password']);

    const taken = await apiErrorOf(
      clientOn(baseUrl).register({ email, password: STRONG_PASSWORD }),
    );
    expect(taken).toMatchObject({ status: 409, error: 'email_taken', details: [] });

    const missing = await apiErrorOf(
      client.GET('/api/influencers/{ref}', { params: { path: { ref: 'nobody_here' } } }),
    );
    expect(missing).toMatchObject({ status: 404, error: 'not_found' });

    // The registration e-mail started the address's 60 s window.
    const tooSoon = await apiErrorOf(
      client.POST('/api/send-confirmation-code', { body: { email } }),
    );
    expect(tooSoon).toMatchObject({ status: 429, error: 'too_many_requests' });
    expect(tooSoon.retryAfter).toBeGreaterThan(0);
    expect(tooSoon.retryAfter).toBeLessThanOrEqual(60);
  });

  it('logout ends the session on the service and forgets the tokens', async () => {
    let signedOut = 0;
    const device = new Device();
    const { client } = await registered(baseUrl, device, { onSignedOut: () => signedOut++ });
    const before = await client.tokens();
    await client.logout();
    expect(await client.tokens()).toBeNull();
    expect(signedOut).toBe(1);

    // The old access token is refused by the service, and the signed-out client sends none.
    const refused = await t.call('GET', '/api/profile', { token: before?.accessToken });
    expect(refused.statusCode).toBe(401);
    const error = await apiErrorOf(client.GET('/api/profile'));
    expect(error).toMatchObject({ status: 401, error: 'unauthorized' });
    expect(device.count(REFRESH)).toBe(0);
  });

  it('logout of a session already ended elsewhere resolves, signed out once', async () => {
    let signedOut = 0;
    const { client } = await registered(baseUrl, new Device(), { onSignedOut: () => signedOut++ });
    const token = (await client.tokens())?.accessToken;
    // Revoked from another device (or by a password change) meanwhile.
    expect((await t.post('/api/logout', {}, { token })).statusCode).toBe(200);
    await client.logout();
    expect(await client.tokens()).toBeNull();
    expect(signedOut).toBe(1);
  });
});
