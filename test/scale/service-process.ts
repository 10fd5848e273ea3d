import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The service's entry point, run through tsx exactly as `npm run dev` would. */
const SERVER_ENTRY = fileURLToPath(new URL('../../src/main.cts', import.meta.url));

/** Tokens carry `iss`/`aud` = PUBLIC_URL, so every instance of one deployment shares it. */
const SHARED_PUBLIC_URL = 'http://127.0.0.1:9';

export function newAppSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** A port nobody listens on right now (listen on 0, read it, close). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `condition` until it holds or `timeoutMs` passes. */
export async function waitUntil(
  what: string,
  condition: () => Promise<boolean> | boolean,
  timeoutMs = 15_000,
  intervalMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (
      await Promise.resolve()
        .then(condition)
        .catch(() => false)
    )
      return;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

export interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

export interface RequestOptions {
  readonly body?: unknown;
  readonly token?: string;
  /** Sent as X-Forwarded-For; the service runs with TRUST_PROXY=true. */
  readonly ip?: string;
  readonly timeoutMs?: number;
}

/** One `account-service` process (src/main.cts) on a real port, with its output captured. */
export class ServiceProcess {
  /** Every line the process wrote to stdout or stderr (pino JSON lines, mostly). */
  readonly logs: string[] = [];
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
  ) {
    const collect = (stream: NodeJS.ReadableStream | null) => {
      let pending = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        const lines = (pending + chunk).split('\n');
        pending = lines.pop() ?? '';
        this.logs.push(...lines.filter((line) => line.trim() !== ''));
      });
    };
    collect(child.stdout);
    collect(child.stderr);
    this.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        this.exitCode = code;
        resolve(code);
      }),
    );
  }

  /** Spawns the service; call `waitHealthy()` before using it. */
  static spawn(env: Record<string, string>, port: number): ServiceProcess {
    const child = spawn(process.execPath, ['--import', 'tsx', SERVER_ENTRY], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        HOST: '127.0.0.1',
        PORT: String(port),
        PUBLIC_URL: SHARED_PUBLIC_URL,
        TRUST_PROXY: 'true',
        LOG_LEVEL: 'warn',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new ServiceProcess(port, child);
  }

  static async start(env: Record<string, string>): Promise<ServiceProcess> {
    const service = ServiceProcess.spawn(env, await freePort());
    try {
      await service.waitHealthy();
    } catch (error) {
      // The caller never gets it to stop: left running, it would load the machine for the files
      // that follow (and keep its port and database connections).
      await service.kill();
      throw error;
    }
    return service;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get alive(): boolean {
    return this.exitCode === undefined;
  }

  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.alive) {
        throw new Error(
          `service exited (${this.exitCode}) before healthy:\n${this.logs.join('\n')}`,
        );
      }
      const healthy = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(1_000) })
        .then((r) => r.status === 200)
        .catch(() => false);
      if (healthy) return;
      if (Date.now() > deadline) {
        throw new Error(`service not healthy within ${timeoutMs} ms:\n${this.logs.join('\n')}`);
      }
      await sleep(100);
    }
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = {};
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    if (options.ip !== undefined) headers['x-forwarded-for'] = options.ip;
    const response = await fetch(this.url + path, {
      method,
      headers,
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    }).catch((error: unknown) => {
      throw this.alive ? error : this.diedError(method, path);
    });
    const text = await response.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = { raw: text };
    }
    return { status: response.status, body, headers: response.headers };
  }

  post(path: string, body: unknown, options: Omit<RequestOptions, 'body'> = {}): Promise<Reply> {
    return this.request('POST', path, { ...options, body });
  }

  get(path: string, options: RequestOptions = {}): Promise<Reply> {
    return this.request('GET', path, options);
  }

  /** Why a request failed when the process is gone: its exit code and last output. */
  private diedError(method: string, path: string): Error {
    const tail = this.logs.slice(-40).join('\n');
    return new Error(
      `${method} ${path}: the service exited (${this.exitCode}); last output:\n${tail}`,
    );
  }

  /** Log lines whose pino `msg` (or raw text) matches. */
  logsMatching(pattern: RegExp): string[] {
    return this.logs.filter((line) => pattern.test(line));
  }

  /** Sends `signal` and waits for the process to exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.alive) return;
    this.child.kill(signal);
    await this.exited;
  }
}
