import v8 from 'node:v8';
import vm from 'node:vm';
import { expect } from 'vitest';
import {
  ApiError,
  createAccountClient,
  type AccountClient,
  type AccountClientOptions,
  type Fetch,
} from '../../client/src/index.js';
import type { Backend } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

/** The service listening on a loopback port; it takes client addresses from X-Forwarded-For. */
export async function startService(backend: Backend): Promise<{ t: TestApp; baseUrl: string }> {
  const t = await TestApp.start(backend, { env: { TRUST_PROXY: 'true' } });
  return { t, baseUrl: await t.listen() };
}

interface Failing {
  readonly request: string;
  times: number;
  readonly answerLost: boolean;
  readonly answer?: (request: Request) => Response | Promise<Response>;
}

/**
 * One device's network: real fetch, with the device's own client address (the per-IP limits,
 * shared through Redis with other suites, then see devices, not 127.0.0.1), recording every
 * request as `METHOD /path`.
 */
export class Device {
  readonly requests: string[] = [];
  private readonly ip = randomIp();
  private failing: Failing | undefined;
  private readonly inFlight = new Set<Request>();

  readonly fetch: Fetch = async (request) => {
    const made = `${request.method} ${new URL(request.url).pathname}`;
    this.requests.push(made);
    request.headers.set('X-Forwarded-For', this.ip);
    const failing = this.failing;
    if (failing === undefined || made !== failing.request || failing.times === 0)
      return globalThis.fetch(request);
    failing.times -= 1;
    if (failing.answer !== undefined) return failing.answer(request);
    if (!failing.answerLost) throw new TypeError('fetch failed: the network is down');
    await (await globalThis.fetch(request)).arrayBuffer();
    throw new TypeError('fetch failed: the connection was reset');
  };

  count(request: string): number {
    return this.requests.filter((made) => made === request).length;
  }

  /** The next `times` such requests fail as fetch fails when the network is down: they reach nothing. */
  dropNext(request: string, times = 1): void {
    this.failing = { request, times, answerLost: false };
  }

  /**
   * The next `times` such requests get `answer` (e.g. a 503 of a proxy in front of the service)
   * and never reach the service.
   */
  answerNext(
    request: string,
    answer: (request: Request) => Response | Promise<Response>,
    times = 1,
  ): void {
    this.failing = { request, times, answerLost: false, answer };
  }

  /**
   * The next such request never gets an answer (a dead connection): it ends only if aborted. The
   * device holds it meanwhile, as a connection holds a request in flight (else the collector
   * takes it, and its signal, before any abort reaches it).
   */
  hangNext(request: string): void {
    this.answerNext(
      request,
      (sent) =>
        new Promise((_, reject) => {
          this.inFlight.add(sent);
          sent.signal.addEventListener('abort', () => {
            this.inFlight.delete(sent);
            reject(sent.signal.reason as Error);
          });
        }),
    );
  }

  /** The next such request reaches the service, which answers, but the answer is lost on the way. */
  loseAnswerOfNext(request: string): void {
    this.failing = { request, times: 1, answerLost: true };
  }
}

export const REFRESH = 'POST /api/refresh-token';

/**
 * Runs V8's garbage collector every 50 ms until the returned function is called: what a test
 * waits for must not depend on something only weakly held surviving until then (a request
 * nothing holds, with the signal that would end it, is collected and never ends).
 */
export function collectingGarbage(): () => void {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const timer = setInterval(gc, 50);
  return () => clearInterval(timer);
}

export function clientOn(
  baseUrl: string,
  device = new Device(),
  options: Omit<AccountClientOptions, 'baseUrl' | 'fetch'> = {},
): AccountClient {
  return createAccountClient({ baseUrl, fetch: device.fetch, ...options });
}

/** A client signed in to a new account. */
export async function registered(
  baseUrl: string,
  device = new Device(),
  options: Omit<AccountClientOptions, 'baseUrl' | 'fetch'> = {},
): Promise<{ client: AccountClient; email: string }> {
  const client = clientOn(baseUrl, device, options);
  const email = uniqueEmail('client');
  await client.register({ email, password: STRONG_PASSWORD });
  return { client, email };
}

/** Resolves to the ApiError the call rejected with (fails the test if it did not). */
export async function apiErrorOf(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}
