import type { Tokens, TokenStore } from './token-store.js';

/** How long before its expiry an access token is renewed rather than sent. */
export const RENEW_MARGIN_MS = 30_000;

export type Fetch = (request: Request) => Promise<Response>;

export interface SessionOptions {
  readonly store: TokenStore;
  /**
   * Presents a refresh token to `POST /api/refresh-token`: the new tokens, or `null` when the
   * service refused it (`401 invalid_refresh_token`: the session is over). Throws otherwise.
   */
  readonly refresh: (refreshToken: string) => Promise<Tokens | null>;
  readonly now: () => number;
  readonly onSignedOut?: (() => void) | undefined;
}

/**
 * The signed-in session: its tokens (in the store) and their renewal. Refresh tokens rotate on
 * every use and an already-rotated one ends the session (API.md, Tokens), so a refresh always
 * presents the newest token known, and the calls that find the access token expired together share
 * one refresh. Clients that do not share a store (tabs that read it before either refreshed) may
 * still present the same token at once: within 10 s of its rotation the service answers each with
 * the session's current refresh token, so they end up holding the same one.
 */
export class Session {
  private readonly options: SessionOptions;
  private renewal: Promise<Tokens | null> | undefined;
  /** The sign-out under way: concurrent calls share it (a double tap forgets the tokens once). */
  private signingOut: Promise<void> | undefined;
  /** Sign-ins and sign-outs so far: a refresh that saw one begin meanwhile keeps out of the store. */
  private changes = 0;
  private readonly listeners = new Set<(tokens: Tokens | null) => void>();

  constructor(options: SessionOptions) {
    this.options = options;
  }

  /**
   * Calls `listener` with what the store holds after each sign-in and sign-out here (not after a
   * refresh: the same user and session); returns the unsubscribe. Chat connections listen, so that
   * another user's events stop at once, not at the next token renewal.
   */
  onChange(listener: (tokens: Tokens | null) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async tokens(): Promise<Tokens | null> {
    return this.options.store.get();
  }

  /** The tokens to make a call with, renewed first when the access token is about to expire. */
  async forCall(): Promise<Tokens | null> {
    const tokens = await this.tokens();
    return tokens === null ? null : this.fresh(tokens);
  }

  /**
   * `forCall` for a call made for the user signed in now: `USER_GONE` when the renewal found them
   * signed out, or another user signed in meanwhile; `null` when nobody was signed in.
   */
  async forCallOfThisUser(): Promise<Tokens | null | typeof USER_GONE> {
    const tokens = await this.tokens();
    if (tokens === null) return null;
    const fresh = await this.fresh(tokens);
    return fresh !== null && accountOf(fresh) === accountOf(tokens) ? fresh : USER_GONE;
  }

  private async fresh(tokens: Tokens): Promise<Tokens | null> {
    const expiresAt = tokens.expiresAt;
    if (expiresAt === undefined || this.options.now() < expiresAt - RENEW_MARGIN_MS) return tokens;
    return this.renew(tokens);
  }

  /**
   * Tokens to use instead of `stale`, whose access token expired or was refused; `null` once
   * signed out. Every call that asks while a refresh is under way gets that refresh's outcome.
   */
  renew(stale: Pick<Tokens, 'accessToken'>): Promise<Tokens | null> {
    this.renewal ??= this.refreshFrom(stale).finally(() => {
      this.renewal = undefined;
    });
    return this.renewal;
  }

  async signIn(tokens: Tokens): Promise<void> {
    this.changes += 1;
    await this.options.store.set(tokens);
    this.changed(tokens);
  }

  /** Forgets the tokens; tells `onSignedOut` if there were any. */
  signOut(): Promise<void> {
    this.signingOut ??= this.forget().finally(() => {
      this.signingOut = undefined;
    });
    return this.signingOut;
  }

  private async forget(): Promise<void> {
    const change = ++this.changes;
    const had = await this.tokens();
    // A sign-in that began while the store was read (an asynchronous one) is the later, and wins.
    if (this.changes !== change) return;
    await this.options.store.set(null);
    if (had !== null) this.options.onSignedOut?.();
    this.changed(null);
  }

  private changed(tokens: Tokens | null): void {
    for (const listener of [...this.listeners]) listener(tokens);
  }

  /**
   * Forgets the tokens if they are still `ended`'s (one session's, however often refreshed
   * meanwhile: its access token names it), not a sign-in made meanwhile, here or in a tab.
   */
  async signOutOf(ended: Tokens | null): Promise<void> {
    const current = await this.tokens();
    if (current === null || ended === null || sessionOf(current) !== sessionOf(ended)) return;
    await this.signOut();
  }

  private async refreshFrom(stale: Pick<Tokens, 'accessToken'>): Promise<Tokens | null> {
    const changes = this.changes;
    const current = await this.tokens();
    // Signed out meanwhile, or already renewed (by an earlier refresh, or a tab sharing the store).
    if (current === null || current.accessToken !== stale.accessToken) return current;
    const renewed = await this.options.refresh(current.refreshToken);
    // The store moved on meanwhile (signed out, or in again as anyone, here or in a tab sharing
    // it): what it holds now wins over this refresh's answer, which must not undo a sign-out.
    const latest = await this.tokens();
    if (latest === null || latest.refreshToken !== current.refreshToken) return latest;
    // A sign-in or sign-out here began meanwhile and may not have reached the store yet (an
    // asynchronous store): its write is the later one, and wins.
    if (this.changes !== changes) return this.tokens();
    if (renewed !== null) {
      // Handed to the store at once, with no await since the check: a sign-out that begins now
      // writes after it, and wins.
      await this.options.store.set(renewed);
      return renewed;
    }
    // Refused: the session was revoked or expired.
    await this.signOut();
    return null;
  }
}

/**
 * A fetch that sends the session's access token. When the service answers 401, it renews the
 * tokens (one refresh for every call that got a 401 at the same time) and sends the call again,
 * once; signed out, the 401 stands. A call belongs to the user signed in when it was made: if
 * another signed in meanwhile (a tab sharing the store), it is not made as them.
 */
export function authorizedFetch(session: Session, fetch: Fetch): Fetch {
  return async (request) => {
    const tokens = await orAbort(request.signal, session.forCallOfThisUser());
    // Not sent at all: anonymous, it could still succeed (a code request, a directory page).
    if (tokens === USER_GONE) return userGone();
    if (tokens === null) return fetch(request);
    const again = request.clone();
    const response = await fetch(withBearer(request, tokens.accessToken));
    if (response.status !== 401 || !(await refusesToken(response))) return response;
    const renewed = await orAbort(request.signal, session.renew(tokens)).catch(async (error) => {
      await response.body?.cancel();
      throw error;
    });
    // Signed out; or signed in again as someone else meanwhile (a tab sharing the store): the
    // call was made for the user who is gone, and must not be made as another.
    if (renewed === null || accountOf(renewed) !== accountOf(tokens)) return response;
    await response.body?.cancel();
    return fetch(withBearer(again, renewed.accessToken));
  };
}

/**
 * `work`, or the call's abort (the app's, or a catch-up's deadline) if that comes first: a call
 * waiting for a renewal (up to the refresh's 9 s) ends when it is aborted. The renewal goes on
 * for the other calls that share it.
 */
function orAbort<T>(signal: AbortSignal, work: Promise<T>): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const aborted = () => reject(signal.reason as Error);
    signal.addEventListener('abort', aborted, { once: true });
    void work.then(resolve, reject).finally(() => signal.removeEventListener('abort', aborted));
  });
}

/** A call's user signed out (or another signed in) before it could be made. */
const USER_GONE = Symbol('user gone');

/** The service's own answer to a call without a token where one is needed. */
function userGone(): Response {
  const body = { error: 'unauthorized', message: 'A valid access token is required.' };
  return new Response(JSON.stringify(body), {
    status: 401,
    headers: { 'content-type': 'application/json' },
  });
}

/**
 * Whether a 401 refuses the access token (`unauthorized`), rather than what the call presented
 * (a login's wrong password, `invalid_credentials`): renewing and sending that again would
 * rotate the refresh token for nothing and count the wrong password twice. A body that says
 * neither (a proxy's page) is taken as the token's refusal.
 */
async function refusesToken(response: Response): Promise<boolean> {
  try {
    const body = (await response.clone().json()) as { error?: unknown } | null;
    return typeof body?.error !== 'string' || body.error === 'unauthorized';
  } catch {
    return true;
  }
}

/**
 * A claim of the access token (API.md: `sub`, the user; `sid`, the session); not verified.
 * Decoded by hand: React Native's Hermes had no `TextDecoder` before 0.85, and a decoding that
 * failed there made every two tokens look like one user's.
 */
function claimOf(tokens: Tokens, claim: 'sub' | 'sid'): unknown {
  try {
    const payload = tokens.accessToken.split('.')[1] ?? '';
    return (JSON.parse(base64UrlText(payload)) as Record<string, unknown>)[claim];
  } catch {
    return undefined; // not a JWT (tokens of a test double): treated as one account and session
  }
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The text `encoded` (base64url, no padding) holds. Claims' values are ASCII (ids, the issuer's
 * URL); any other byte is kept as the code point of its value, which JSON still parses.
 */
function base64UrlText(encoded: string): string {
  let text = '';
  let bits = 0;
  let buffer = 0;
  for (const char of encoded) {
    const value = BASE64URL.indexOf(char);
    if (value < 0) throw new Error('not base64url');
    buffer = ((buffer << 6) | value) & 0xffff; // the bits not yet read fit in 12
    bits += 6;
    if (bits < 8) continue;
    bits -= 8;
    text += String.fromCharCode((buffer >> bits) & 0xff);
  }
  return text;
}

/** The user the tokens are of (`sub`), or undefined when they are not a JWT. */
export const accountOf = (tokens: Tokens): unknown => claimOf(tokens, 'sub');
const sessionOf = (tokens: Tokens) => claimOf(tokens, 'sid');

function withBearer(request: Request, accessToken: string): Request {
  request.headers.set('Authorization', `Bearer ${accessToken}`);
  return request;
}
