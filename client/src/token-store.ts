/** The tokens of a signed-in session, as the client keeps them. */
export interface Tokens {
  readonly accessToken: string;
  readonly refreshToken: string;
  /**
   * When the access token expires, in ms since the epoch by this device's clock: the time it was
   * received plus its `expires_in`, so a device clock that is off does not matter. Absent for
   * tokens handed over without it; those are renewed when the service refuses them.
   */
  readonly expiresAt?: number;
}

/**
 * Where the client keeps its tokens, sync or async. The client reads it before every call, so
 * clients that share a store (browser tabs over one localStorage) see each other's refreshes, and
 * writes it after signing in, after each refresh, and with `null` when signing out.
 */
export interface TokenStore {
  get(): Tokens | null | Promise<Tokens | null>;
  set(tokens: Tokens | null): void | Promise<void>;
}

/** The default: the tokens live as long as the client object. */
export function memoryTokenStore(initial: Tokens | null = null): TokenStore {
  let tokens = initial;
  return {
    get: () => tokens,
    set: (next) => {
      tokens = next;
    },
  };
}

/** The part of the Web Storage API the adapter uses (`localStorage`, `sessionStorage`). */
export interface WebStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/**
 * Keeps the tokens in Web Storage under one key, e.g. `webStorageTokenStore(localStorage)`: every
 * tab of the origin shares them and signs in and out together. (localStorage is readable by any
 * script on the page; prefer the memory store where an XSS hole would be costly.)
 */
export function webStorageTokenStore(
  storage: WebStorage,
  key = 'account-service.tokens',
): TokenStore {
  return {
    get: () => parseTokens(storage.getItem(key)),
    set: (tokens) => {
      if (tokens === null) storage.removeItem(key);
      else storage.setItem(key, JSON.stringify(tokens));
    },
  };
}

/** Stored text back to tokens; anything else (absent, edited by hand, another app's) is none. */
function parseTokens(text: string | null): Tokens | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return null;
    const { accessToken, refreshToken, expiresAt } = value as Record<string, unknown>;
    if (typeof accessToken !== 'string' || typeof refreshToken !== 'string') return null;
    return typeof expiresAt === 'number'
      ? { accessToken, refreshToken, expiresAt }
      : { accessToken, refreshToken };
  } catch {
    return null;
  }
}
