import WebSocket from 'ws';

/** A frame the server sent, parsed. */
export type Frame = Record<string, unknown> & { type: string };

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

export interface ConnectOptions {
  /** Sent as `Authorization: Bearer` on the upgrade. */
  readonly token?: string;
  readonly headers?: Record<string, string>;
  /** Appended to the URL, e.g. `?access_token=…` (which the server must ignore). */
  readonly query?: string;
  /** false: the client leaves the server's pings unanswered. */
  readonly autoPong?: boolean;
}

/** A real WebSocket client (`ws`) of the chat socket, recording every frame it receives. */
export class SocketClient {
  readonly frames: Frame[] = [];
  /** Pings received, counted from the upgrade on: one may come in the same read as the 101. */
  pings = 0;
  readonly closed: Promise<Closed>;
  private closedAs: Closed | undefined;
  private readonly waiters = new Set<() => void>();

  private constructor(readonly ws: WebSocket) {
    // Here, not after `connect` resolves: ws emits a ping that arrived with the upgrade's answer
    // before the code awaiting `open` runs, so a listener added then can miss it.
    ws.on('ping', () => (this.pings += 1));
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(String(data)) as Frame);
      for (const wake of this.waiters) wake();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        this.closedAs = { code, reason: String(reason) };
        resolve(this.closedAs);
        for (const wake of this.waiters) wake();
      }),
    );
    ws.on('error', () => undefined); // seen as the close that follows
  }

  static connect(url: string, options: ConnectOptions = {}): Promise<SocketClient> {
    const headers = { ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    const ws = new WebSocket(url + (options.query ?? ''), {
      headers,
      autoPong: options.autoPong ?? true,
    });
    const client = new SocketClient(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(client));
      ws.once('error', reject); // a refused upgrade: "Unexpected server response: <status>"
    });
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  get closeState(): Closed | undefined {
    return this.closedAs;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  framesOf(type: string): Frame[] {
    return this.frames.filter((frame) => frame.type === type);
  }

  /** Waits until `count` frames of `type` have arrived; fails if the socket closes first. */
  async waitFor(type: string, count = 1, timeoutMs = 10_000): Promise<Frame[]> {
    await this.until(() => this.framesOf(type).length >= count, `${count} × ${type}`, timeoutMs);
    return this.framesOf(type);
  }

  /** Sends `ping` and waits for its `pong`: every frame sent before it has been handled. */
  async roundTrip(): Promise<void> {
    const pongs = this.framesOf('pong').length;
    this.send({ type: 'ping' });
    await this.waitFor('pong', pongs + 1);
  }

  /** Waits for the close, failing after `timeoutMs`. */
  async waitClosed(timeoutMs = 10_000): Promise<Closed> {
    await this.until(() => this.closedAs !== undefined, 'the close', timeoutMs, false);
    return this.closedAs as Closed;
  }

  close(): void {
    this.ws.close();
  }

  private until(
    done: () => boolean,
    what: string,
    timeoutMs: number,
    failOnClose = true,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (done()) return finish();
        if (failOnClose && this.closedAs !== undefined)
          finish(new Error(`closed (${this.closedAs.code}) while waiting for ${what}`));
      };
      const timer = setTimeout(() => finish(new Error(`timed out waiting for ${what}`)), timeoutMs);
      const finish = (error?: Error) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        if (error) reject(error);
        else resolve();
      };
      this.waiters.add(check);
      check();
    });
  }
}
