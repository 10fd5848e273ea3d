// What a refresh under way must not undo: a sign-out or a sign-in that happened meanwhile. A fake
// fetch holds the refresh's answer back, so the order of events is the test's, not the network's.
import { describe, expect, it } from 'vitest';
import { createAccountClient, memoryTokenStore, type Tokens } from '../../client/src/index.js';

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

const signedIn = (name: string) => ({
  message: 'Login successful',
  user: { id: name },
  access_token: `${name}-access`,
  refresh_token: `${name}-refresh`,
  token_type: 'Bearer',
  expires_in: 900,
});

const NOW = 1_000_000;

/** A client whose access token is about to expire (a call refreshes first), and the held answer. */
function nearExpiry() {
  let answer: (response: Response) => void = () => undefined;
  const refreshAnswer = new Promise<Response>((resolve) => (answer = resolve));
  const calls: string[] = [];
  const fetch = async (request: Request) => {
    const path = new URL(request.url).pathname;
    calls.push(`${path} ${request.headers.get('authorization') ?? ''}`.trim());
    if (path === '/api/refresh-token') return refreshAnswer;
    if (path === '/api/login') return json(200, signedIn('bob'));
    if (path === '/api/profile') return json(200, { user: { id: 'someone' } });
    throw new Error(`unexpected ${path}`);
  };
  let signedOut = 0;
  const tokens: Tokens = {
    accessToken: 'ada-access',
    refreshToken: 'ada-refresh',
    expiresAt: NOW + 10_000,
  };
  const api = createAccountClient({
    baseUrl: 'https://api.example.test',
    fetch,
    store: memoryTokenStore(tokens),
    now: () => NOW,
    onSignedOut: () => (signedOut += 1),
  });
  const renewed = () => answer(json(200, { ...signedIn('ada2'), message: 'Token refreshed' }));
  return { api, calls, renewed, signedOut: () => signedOut };
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 10));

describe('a refresh under way', () => {
  it('does not undo a sign-out made meanwhile', async () => {
    const { api, renewed, signedOut } = nearExpiry();
    const call = api.GET('/api/profile').catch((error: unknown) => error);
    await flush(); // the refresh has been sent
    await api.signOut();
    renewed();
    await call;
    expect(await api.tokens()).toBeNull();
    expect(signedOut()).toBe(1);
  });

  it('does not replace the tokens of a sign-in made meanwhile', async () => {
    const { api, calls, renewed } = nearExpiry();
    const call = api.GET('/api/profile');
    await flush();
    await api.signOut();
    await api.login({ email: 'bob@example.test', password: 'a-Quiet-harbour-93' });
    renewed();
    await call;
    expect((await api.tokens())?.accessToken).toBe('bob-access');
    // The call that waited for the refresh went out as the user signed in now, not as the old one.
    expect(calls.at(-1)).toBe('/api/profile Bearer bob-access');
  });
});
