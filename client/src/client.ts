import createClient, {
  type Client,
  type FetchResponse,
  type MaybeOptionalInit,
} from 'openapi-fetch';
import type {
  HttpMethod,
  MediaType,
  PathsWithMethod,
  RequiredKeysOf,
} from 'openapi-typescript-helpers';
import { ChatConnection, type ChatConnectionOptions } from './chat/connection.js';
import { restHistory } from './chat/history.js';
import { chatSocketUrl } from './chat/socket-url.js';
import { withinMs } from './deadline.js';
import { ApiError, errorOf, UnexpectedResponseError } from './errors.js';
import type { paths } from './schema.gen.js';
import { authorizedFetch, Session, type Fetch } from './session.js';
import { memoryTokenStore, type Tokens, type TokenStore } from './token-store.js';
import type { LoginBody, LoginResult, RegisterBody, RegisterResult, TokenResult } from './types.js';

export interface AccountClientOptions {
  /** The service's origin, e.g. `https://accounts.example.com` (every path starts with `/api`). */
  readonly baseUrl: string;
  /** Where the tokens live; default: in memory, for the life of the client. */
  readonly store?: TokenStore;
  /** Called when the client forgets its tokens: `logout()`, `signOut()`, or a refused refresh. */
  readonly onSignedOut?: () => void;
  /** Default: the global `fetch`. */
  readonly fetch?: Fetch;
  /** This device's clock (ms since the epoch), for the access token's expiry; default `Date.now`. */
  readonly now?: () => number;
}

/** Messages per `changes` page while the chat socket catches up. */
const CHANGES_PAGE_SIZE = 100;

/** The success body of an operation called with `Init`. */
type Data<Operation, Init> =
  Operation extends Record<string | number, unknown>
    ? Exclude<FetchResponse<Operation, Init, MediaType>['data'], undefined>
    : never;

/** The options argument, required when the operation has a required body or parameter (as in openapi-fetch, which does not export it). */
type InitParam<Init> =
  RequiredKeysOf<Init> extends never
    ? [(Init & { [key: string]: unknown })?]
    : [Init & { [key: string]: unknown }];

/**
 * openapi-fetch's method for one HTTP method, resolving to the response body instead: an error
 * answer rejects with `ApiError` (or `UnexpectedResponseError` for one not from the service).
 */
export type CallMethod<Method extends HttpMethod> = <
  Path extends PathsWithMethod<paths, Method>,
  Init extends MaybeOptionalInit<paths[Path], Method>,
>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<Data<paths[Path][Method], Init>>;

export interface AccountClient {
  readonly GET: CallMethod<'get'>;
  readonly POST: CallMethod<'post'>;
  readonly PUT: CallMethod<'put'>;
  readonly PATCH: CallMethod<'patch'>;
  readonly DELETE: CallMethod<'delete'>;
  /** Creates the account and keeps the new session's tokens. */
  register(body: RegisterBody): Promise<RegisterResult>;
  /** Signs in and keeps the session's tokens. */
  login(body: LoginBody): Promise<LoginResult>;
  /** Ends this session (`all`: every session of the user) on the service, and forgets the tokens. */
  logout(options?: { all?: boolean }): Promise<void>;
  /** Forgets the tokens without telling the service (the session stays valid until it expires). */
  signOut(): Promise<void>;
  /** The tokens kept now, or `null` when signed out. */
  tokens(): Promise<Tokens | null>;
  /** An access token good for at least 30 s (renewed if needed), or `null` when signed out. */
  accessToken(): Promise<string | null>;
  /**
   * Opens the chat socket and keeps it open (first-frame auth, renewal before expiry, reconnects
   * with backoff); its listeners get each change once, in order (API.md's catch-up rule).
   */
  connectChat(options?: ChatConnectionOptions): ChatConnection;
  /** The underlying openapi-fetch client, with the same token handling, answering `{data, error, response}`. */
  readonly fetchClient: Client<paths>;
}

export function createAccountClient(options: AccountClientOptions): AccountClient {
  const fetch: Fetch = options.fetch ?? ((request) => globalThis.fetch(request));
  const now = options.now ?? Date.now;
  // Sign-in and refresh calls carry no access token: an old one must not trigger a refresh there.
  const anonymous = createClient<paths>({ baseUrl: options.baseUrl, fetch });
  const tokensFrom = (result: TokenResult): Tokens => ({
    accessToken: result.access_token,
    refreshToken: result.refresh_token,
    expiresAt: now() + result.expires_in * 1000,
  });
  const session = new Session({
    store: options.store ?? memoryTokenStore(),
    now,
    onSignedOut: options.onSignedOut,
    async refresh(refreshToken) {
      const body = { refresh_token: refreshToken };
      return withRetries(async (signal) => {
        const { data, error, response } = await anonymous.POST('/api/refresh-token', {
          body,
          signal,
        });
        if (data !== undefined) return tokensFrom(data);
        const refused = errorOf(response, error);
        if (refused instanceof ApiError && refused.error === 'invalid_refresh_token') return null;
        throw refused;
      });
    },
  });
  const fetchClient = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: authorizedFetch(session, fetch),
  });
  const signIn = async <Result extends TokenResult>(result: Result): Promise<Result> => {
    await session.signIn(tokensFrom(result));
    return result;
  };
  const get = callMethod(fetchClient, 'get');
  const post = callMethod(fetchClient, 'post');
  const postAnonymously = callMethod(anonymous, 'post');
  const connectChat = (chatOptions: ChatConnectionOptions = {}) =>
    new ChatConnection(
      {
        url: chatSocketUrl(options.baseUrl),
        tokens: () => session.forCall(),
        renew: (refused) => session.renew(refused),
        accountChanges: (listener) => session.onChange(listener),
        now,
        history: restHistory(
          get,
          chatOptions.pageSize ?? CHANGES_PAGE_SIZE,
          chatOptions.catchUpTimeoutMs,
        ),
      },
      chatOptions,
    );

  return {
    GET: get,
    POST: post,
    PUT: callMethod(fetchClient, 'put'),
    PATCH: callMethod(fetchClient, 'patch'),
    DELETE: callMethod(fetchClient, 'delete'),
    register: async (body) => signIn(await postAnonymously('/api/register', { body })),
    login: async (body) => signIn(await postAnonymously('/api/login', { body })),
    async logout({ all } = {}) {
      const ending = await session.tokens();
      try {
        await post('/api/logout', { body: { all } });
      } catch (error) {
        // The session had ended already (revoked elsewhere): signed out is what was asked for.
        // Any other failure (no answer, a 5xx) leaves it alive on the service: the tokens stay,
        // so that the logout can be tried again (or `signOut()` forget them anyway).
        if (!(error instanceof ApiError && error.status === 401)) throw error;
      }
      await session.signOutOf(ending);
    },
    signOut: () => session.signOut(),
    tokens: () => session.tokens(),
    accessToken: async () => (await session.forCall())?.accessToken ?? null,
    connectChat,
    fetchClient,
  };
}

interface Outcome {
  data?: unknown;
  error?: unknown;
  response: Response;
}

function callMethod<Method extends HttpMethod>(
  client: Client<paths>,
  method: Method,
): CallMethod<Method> {
  // The same call as openapi-fetch's, unwrapped. TypeScript cannot carry a generic signature
  // through a wrapper, hence the casts; CallMethod states the signature callers see.
  const request = client.request as (
    method: Method,
    url: string,
    init?: object,
  ) => Promise<Outcome>;
  return (async (url: string, init?: object) => {
    const { data, error, response } = await request(method, url, init);
    if (response.ok) return data;
    throw errorOf(response, error);
  }) as CallMethod<Method>;
}

/**
 * Waits between tries of a refresh that failed on the way (no answer, or a 5xx). The service may
 * have rotated the token before the answer was lost; it answers the same token again with the
 * session's current one for 10 s only (API.md, Tokens), after which presenting it ends the
 * session. So every try, its wait for an answer included, ends within `REFRESH_DEADLINE_MS` of the
 * first one's start, inside those 10 s (a try that has no answer by then is abandoned), and only
 * then does the failure stand.
 */
const REFRESH_RETRY_DELAYS_MS = [500, 2_000, 4_000];
const REFRESH_DEADLINE_MS = 9_000;

async function withRetries<T>(attempt: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const deadline = performance.now() + REFRESH_DEADLINE_MS;
  for (let tries = 0; ; tries++) {
    try {
      return await withinMs(deadline - performance.now(), attempt);
    } catch (error) {
      const delay = REFRESH_RETRY_DELAYS_MS[tries];
      if (delay === undefined || !failedOnTheWay(error)) throw error;
      if (performance.now() + delay >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/**
 * No answer (fetch threw), or the service or a proxy before it failed (5xx): the same token may
 * be tried again. A 4xx (a limit, a proxy refusing) would only be given again.
 */
function failedOnTheWay(error: unknown): boolean {
  const answered = error instanceof ApiError || error instanceof UnexpectedResponseError;
  return !answered || error.status >= 500;
}
