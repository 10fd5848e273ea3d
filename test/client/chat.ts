import type { Socket } from 'node:net';
import {
  createAccountClient,
  memoryTokenStore,
  type AccountClient,
  type ChatConnection,
  type ChatEventMap,
  type Tokens,
  type TokenStore,
  type WebSocketConstructor,
} from '../../client/src/index.js';
import type { RealtimeApp } from '../chat/realtime/fixture.js';
import type { Account } from '../helpers/test-app.js';
import { Device } from './service.js';

/** A frame as one side sent it, parsed. */
export type Frame = Record<string, unknown> & { type: string };

const isEvent = (frame: Frame) =>
  frame.type.startsWith('message.') || frame.type === 'conversation.read';

/**
 * A socket of Node's global WebSocket (the one the client uses by default) that records what it
 * sends and receives, on a network the test controls: `losing` drops events on their way in,
 * `silent` drops every frame.
 */
export class TestSocket extends WebSocket {
  readonly sent: Frame[] = [];
  readonly received: Frame[] = [];
  readonly lost: Frame[] = [];
  losing = false;
  silent = false;

  constructor(url: string, sockets: Sockets) {
    // Port 1 refuses the connection: the socket closes with 1006, as when the network is down.
    super(sockets.offline ? 'ws://127.0.0.1:1/api/chat/ws' : url);
    sockets.made.push(this);
    // Added before the connection sets `onmessage`, so it runs first and can stop the frame.
    this.addEventListener('message', (event) => {
      const frame = JSON.parse(String(event.data)) as Frame;
      this.received.push(frame);
      if (!this.silent && !(this.losing && isEvent(frame))) return;
      this.lost.push(frame);
      event.stopImmediatePropagation();
    });
  }

  override send(data: string): void {
    this.sent.push(JSON.parse(data) as Frame);
    super.send(data);
  }

  /** Sends `ping` itself and waits for the `pong`: every frame sent before has been read. */
  async roundTrip(): Promise<void> {
    const pongs = () => this.received.filter((frame) => frame.type === 'pong').length;
    const before = pongs();
    super.send(JSON.stringify({ type: 'ping' }));
    await until(() => pongs() > before, 'pong');
  }
}

/** The sockets a connection made; `offline` sends new ones nowhere. */
export class Sockets {
  readonly made: TestSocket[] = [];
  offline = false;
  readonly impl: WebSocketConstructor = ((sockets: Sockets) =>
    class extends TestSocket {
      constructor(url: string) {
        super(url, sockets);
      }
    })(this);

  get last(): TestSocket {
    const socket = this.made.at(-1);
    if (socket === undefined) throw new Error('no socket made yet');
    return socket;
  }
}

/** The raw TCP sockets of every WebSocket upgrade the service accepted, for cutting them. */
export function upgradesOf(rt: RealtimeApp): Socket[] {
  const upgrades: Socket[] = [];
  rt.t.app.server.on('upgrade', (_request, socket: Socket) => upgrades.push(socket));
  return upgrades;
}

/** Waits for `done`, failing after `timeoutMs`. */
export async function until(done: () => boolean, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Everything a connection hands over for `type`, in order. */
export function recorded<Type extends keyof ChatEventMap>(chat: ChatConnection, type: Type) {
  const values: Array<ChatEventMap[Type]> = [];
  chat.on(type, (value) => values.push(value));
  return values;
}

/** An account client on its own device, holding `account`'s tokens (by default with 15 min left). */
export function clientOf(
  rt: RealtimeApp,
  account: Pick<Account, 'accessToken' | 'refreshToken'>,
  options: { expiresInMs?: number; onSignedOut?: () => void } = {},
): { api: AccountClient; device: Device; store: TokenStore } {
  const tokens: Tokens = {
    accessToken: account.accessToken,
    refreshToken: account.refreshToken,
    expiresAt: Date.now() + (options.expiresInMs ?? 15 * 60_000),
  };
  const device = new Device();
  const store = memoryTokenStore(tokens);
  const api = createAccountClient({
    baseUrl: `http://127.0.0.1:${rt.port}`,
    fetch: device.fetch,
    store,
    onSignedOut: options.onSignedOut,
  });
  return { api, device, store };
}
