import { pino } from 'pino';
import { Subscribers, type BusEvent, type EventBus } from '../../../src/events/bus.js';
import { MemoryEventBus } from '../../../src/events/memory-bus.js';
import { RedisEventBus } from '../../../src/events/redis-bus.js';
import type { AppOverrides } from '../../../src/app.js';
import type { Backend, ProvisionedBackend } from '../../helpers/backends.js';
import { TestApp, type Account } from '../../helpers/test-app.js';
import { SocketClient, type ConnectOptions } from './socket-client.js';

/**
 * The app's own event bus (memory, or Redis on the Redis backend), plus a way for a test to say
 * "events may have been lost", as a Redis subscription that came back does.
 */
export class TestBus implements EventBus {
  private readonly resyncListeners = new Set<() => void>();
  private readonly here = new Subscribers();

  constructor(private readonly inner: EventBus) {}

  static async for(env: Record<string, string>): Promise<TestBus> {
    const log = pino({ level: 'silent' });
    const redisUrl = env.REDIS_URL;
    return new TestBus(
      redisUrl === undefined
        ? new MemoryEventBus(log)
        : await RedisEventBus.connect(redisUrl, log, Date.now, { prefix: env.REDIS_PREFIX }),
    );
  }

  publish: EventBus['publish'] = (userIds, event) => this.inner.publish(userIds, event);
  subscribe: EventBus['subscribe'] = async (userId, listener) => {
    this.here.add(userId, listener);
    const stop = await this.inner.subscribe(userId, listener);
    return () => {
      this.here.remove(userId, listener);
      stop();
    };
  };

  /**
   * Hands `event` straight to this instance's sockets, as if it had come through the bus: for
   * tests of the socket layer alone, whose volume (tens of MiB) Redis pub/sub would refuse to
   * carry (its output buffer limit for subscribers drops the connection).
   */
  deliverHere(userIds: readonly string[], event: BusEvent): void {
    for (const userId of userIds)
      this.here.deliver({ userId, event, publishedAt: Date.now() }, (error) => {
        throw error;
      });
  }
  onResync(listener: () => void): () => void {
    this.resyncListeners.add(listener);
    const stop = this.inner.onResync(listener);
    return () => {
      this.resyncListeners.delete(listener);
      stop();
    };
  }
  close: EventBus['close'] = () => this.inner.close();

  resync(): void {
    for (const listener of this.resyncListeners) listener();
  }
}

export interface RealtimeAppOptions {
  readonly overrides?: AppOverrides;
  readonly env?: Record<string, string>;
}

/** The service listening on a real port (port 0), with the chat socket and a TestBus. */
export class RealtimeApp {
  private constructor(
    readonly t: TestApp,
    readonly bus: TestBus,
    readonly port: number,
    private readonly ownedBackend: ProvisionedBackend | undefined,
  ) {}

  static async start(
    backend: Backend | ProvisionedBackend,
    options: RealtimeAppOptions = {},
  ): Promise<RealtimeApp> {
    const provisioned = 'provision' in backend ? await backend.provision() : backend;
    const bus = await TestBus.for({ ...provisioned.env, ...options.env });
    const t = await TestApp.start(provisioned, {
      env: options.env,
      overrides: { events: bus, ...options.overrides },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as { port: number };
    return new RealtimeApp(t, bus, port, 'provision' in backend ? provisioned : undefined);
  }

  get url(): string {
    return `ws://127.0.0.1:${this.port}/api/chat/ws`;
  }

  /** A socket, not authenticated yet. */
  open(options: ConnectOptions = {}): Promise<SocketClient> {
    return SocketClient.connect(this.url, options);
  }

  /** A socket authenticated with the upgrade header, once `ready` has arrived. */
  async connect(account: Pick<Account, 'accessToken'>): Promise<SocketClient> {
    const client = await this.open({ token: account.accessToken });
    await client.waitFor('ready');
    return client;
  }

  /** The id of the session `account` signed in with, as GET /api/sessions lists it. */
  async sessionIdOf(account: Pick<Account, 'accessToken'>): Promise<string> {
    const listed = await this.t.call('GET', '/api/sessions', { token: account.accessToken });
    const sessions = listed.json().sessions as Array<{ id: string; current: boolean }>;
    const current = sessions.find((session) => session.current);
    if (current === undefined) throw new Error('no current session listed');
    return current.id;
  }

  /** GET through the app, for a CatchUpClient. */
  readonly httpGet = async (url: string, token: string): Promise<Record<string, unknown>> => {
    const response = await this.t.call('GET', url, { token });
    if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode}`);
    return response.json();
  };

  async metric(name: string, labels = ''): Promise<number> {
    const text = (await this.t.call('GET', '/metrics')).body;
    const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
    return line === undefined ? 0 : Number(line.split(' ')[1]);
  }

  async close(): Promise<void> {
    await this.t.close();
    await this.ownedBackend?.drop();
  }
}
