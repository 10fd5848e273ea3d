// The client's behaviour where no service answers: what it reads from storage, and an error page
// that did not come from the service (a proxy's).
import { describe, expect, it } from 'vitest';
import {
  createAccountClient,
  UnexpectedResponseError,
  webStorageTokenStore,
  type WebStorage,
} from '../../client/src/index.js';

function storageWith(text: string | null): WebStorage {
  return { getItem: () => text, setItem: () => undefined, removeItem: () => undefined };
}

describe('the client without a service', () => {
  it('reads anything but its own tokens from Web Storage as signed out', () => {
    const tokens = { accessToken: 'a', refreshToken: 'r', expiresAt: 1 };
    expect(webStorageTokenStore(storageWith(JSON.stringify(tokens))).get()).toEqual(tokens);
    for (const text of [null, '', '{', 'null', '"text"', '{"accessToken":"a"}', '[1]']) {
      expect(webStorageTokenStore(storageWith(text)).get()).toBeNull();
    }
  });

  it("rejects a proxy's error page with UnexpectedResponseError, its status and its text", async () => {
    const page = '<html><body>502 Bad Gateway</body></html>';
    const fetch = async () =>
      new Response(page, { status: 502, headers: { 'content-type': 'text/html' } });
    const client = createAccountClient({ baseUrl: 'https://accounts.example.test', fetch });
    const error = await client.GET('/api/influencers/categories').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({ status: 502, body: page });
  });
});
