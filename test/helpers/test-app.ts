import { randomBytes, randomInt } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp, type AppOverrides } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import type { Backend, ProvisionedBackend } from './backends.js';
import { SmtpSink } from './smtp-sink.js';

/** A clock that runs with real time, plus whatever a test skips forward. */
export class TestClock {
  private offset = 0;
  private frozenAt: number | undefined;
  readonly now = (): number => (this.frozenAt ?? Date.now()) + this.offset;
  advance(ms: number): void {
    this.offset += ms;
  }
  /**
   * Stops the clock until `thaw` (a test whose expectations hold within one window of a limit,
   * however slow the machine): only `advance` moves it meanwhile.
   */
  freeze(): { thaw(): void } {
    this.frozenAt = Date.now();
    return { thaw: () => (this.frozenAt = undefined) };
  }
}

export interface CallOptions {
  readonly body?: unknown;
  readonly token?: string;
  readonly headers?: Record<string, string>;
  /** Client address of the request; each TestApp gets its own by default. */
  readonly ip?: string;
}

export interface Account {
  readonly email: string;
  readonly password: string;
  readonly accessToken: string;
  readonly refreshToken: string;
  readonly userId: string;
}

/** The fields of API.md's `user` object, sorted. */
export const USER_FIELDS = [
  'avatar_url',
  'bio',
  'created_at',
  'email',
  'email_confirmed',
  'id',
  'name',
  'updated_at',
];

export const STRONG_PASSWORD = 'plum-Tractor-47-lagoon';

export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}.${randomBytes(5).toString('hex')}@example.test`;
}

export function randomIp(): string {
  return `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
}

/** The service on a fresh database with a real SMTP sink, driven through `app.inject`. */
export class TestApp {
  readonly ip = randomIp();

  private constructor(
    readonly app: FastifyInstance,
    /** A second connection to the service's database, for checking effects. */
    readonly db: Db,
    /** Every log line the app wrote. */
    readonly logs: string[],
    readonly smtp: SmtpSink,
    readonly clock: TestClock,
    readonly backend: ProvisionedBackend,
    private readonly ownsBackend: boolean,
  ) {}

  static async start(
    backend: Backend | ProvisionedBackend,
    options: { env?: Record<string, string>; overrides?: AppOverrides; smtp?: SmtpSink } = {},
  ): Promise<TestApp> {
    const provisioned = 'provision' in backend ? await backend.provision() : backend;
    const smtp = options.smtp ?? (await SmtpSink.start());
    const clock = new TestClock();
    const logs: string[] = [];
    const config = loadConfig({
      SMTP_URL: smtp.url,
      LOG_LEVEL: 'info',
      ...provisioned.env,
      ...options.env,
    });
    const app = await buildApp(config, {
      clock: clock.now,
      deliveryTiming: { pollIntervalMs: 50, baseBackoffMs: 100, maxBackoffMs: 400, claimMs: 5_000 },
      housekeeping: false, // tests sweep with sweepExpired, when they mean to
      logStream: new Writable({
        write(chunk, _encoding, done) {
          logs.push(String(chunk));
          done();
        },
      }),
      ...options.overrides,
    });
    await app.ready();
    const db = await openDatabase(config.database);
    return new TestApp(app, db, logs, smtp, clock, provisioned, 'provision' in backend);
  }

  /** Listens on a free loopback port, for clients that speak real HTTP; returns the base URL. */
  async listen(): Promise<string> {
    await this.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = this.app.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  async close(): Promise<void> {
    await this.app.close();
    await this.db.destroy();
    await this.smtp.stop();
    if (this.ownsBackend) await this.backend.drop();
  }

  call(
    method: InjectOptions['method'],
    url: string,
    options: CallOptions = {},
  ): Promise<LightMyRequestResponse> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    // inject() only starts once something calls its then(): a request held for later (to race
    // another) must be on its way already.
    return Promise.resolve(
      this.app.inject({
        method,
        url,
        headers,
        remoteAddress: options.ip ?? this.ip,
        ...(options.body !== undefined && { payload: options.body as InjectOptions['payload'] }),
      }),
    );
  }

  post(url: string, body?: unknown, options: Omit<CallOptions, 'body'> = {}) {
    return this.call('POST', url, { ...options, body });
  }

  /** Registers a new account and returns its credentials. */
  register(email = uniqueEmail(), password = STRONG_PASSWORD): Promise<Account> {
    return this.signIn('/api/register', 201, email, password, randomIp());
  }

  login(email: string, password: string, ip = randomIp()): Promise<Account> {
    return this.signIn('/api/login', 200, email, password, ip);
  }

  private async signIn(url: string, status: number, email: string, password: string, ip: string) {
    const response = await this.post(url, { email, password }, { ip });
    if (response.statusCode !== status) {
      throw new Error(`${url} failed: ${response.statusCode} ${response.body}`);
    }
    const body = response.json();
    return {
      email,
      password,
      accessToken: body.access_token as string,
      refreshToken: body.refresh_token as string,
      userId: body.user.id as string,
    };
  }

  /** The code of the `count`-th e-mail to `email`, waiting for its delivery. */
  async codeFor(email: string, count = 1): Promise<string> {
    const mail = await this.smtp.waitFor(email, count);
    if (mail.code === undefined) throw new Error(`mail to ${email} carries no code`);
    return mail.code;
  }
}
