import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp, uniqueEmail } from '../helpers/test-app.js';

interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

function parse(raw: string): RawResponse {
  const [head = '', body = ''] = raw.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

async function waitFor(what: string, condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Requests Node's HTTP parser rejects never reach `app.inject`, so these run on a real port with
 * raw bytes. API.md: every response body is the `{message, error}` JSON object.
 */
describe.each(backends)('protocol-level errors on a real socket ($name)', (backend) => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { LOG_LEVEL: 'debug' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(() => t.close());

  const open = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket));
      socket.once('error', reject);
    });

  /** Sends the bytes and reads everything until the server closes the connection. */
  async function exchange(bytes: string): Promise<RawResponse> {
    const socket = await open();
    socket.on('error', () => undefined); // a reset after the answer is fine
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(bytes);
    await Promise.race([
      closed,
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('the server kept the connection open')), 5_000),
      ),
    ]);
    return parse(received);
  }

  const cases: [string, number, string][] = [
    ['a malformed request line', 400, 'NOT AN HTTP REQUEST\r\n\r\n'],
    ['a bad HTTP version', 400, 'GET /healthz HTTP/9.9\r\nHost: localhost\r\n\r\n'],
    ['a missing Host (HTTP/1.1)', 400, 'GET /healthz HTTP/1.1\r\n\r\n'],
    ['a control character in a header', 400, 'GET /healthz HTTP/1.1\r\nHost: a\x01b\r\n\r\n'],
    [
      'headers over the size limit',
      431,
      `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`,
    ],
    [
      // Node's parser caps a body's chunk extensions (16 KiB): a body too large, as Node answers it.
      'chunk extensions over the size limit',
      413,
      'POST /api/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
        `Transfer-Encoding: chunked\r\n\r\n2;x=${'a'.repeat(20_000)}\r\n{}\r\n0\r\n\r\n`,
    ],
  ];

  it.each(cases)(
    '%s answers %i {message, error:"bad_request"} as JSON and closes the connection',
    async (_name, status, bytes) => {
      const response = await exchange(bytes);
      expect(response.status).toBe(status);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.headers.connection).toBe('close');
      expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(response.body));
      const body = JSON.parse(response.body);
      expect(Object.keys(body).sort()).toEqual(['error', 'message']);
      expect(body.error).toBe('bad_request');
      expect(typeof body.message).toBe('string');
      // As every answer: an X-Request-Id that names its log line.
      const id = response.headers['x-request-id'];
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(t.logs.some((line) => (JSON.parse(line) as { reqId?: string }).reqId === id)).toBe(
        true,
      );
    },
  );

  // Written straight to the socket, past every hook (the missing Host alone is refused by a hook):
  // still the headers every answer gets, and no cache keeps them.
  it.each(cases.filter(([name]) => !name.includes('Host')))(
    '%s is answered with X-Content-Type-Options: nosniff and Cache-Control: no-store',
    async (_name, _status, bytes) => {
      const response = await exchange(bytes);
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['cache-control']).toBe('no-store');
    },
  );

  it('HTTP/1.0 may omit Host, and is served', async () => {
    const response = await exchange('GET /healthz HTTP/1.0\r\n\r\n');
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ status: 'ok' });
  });

  it('none of them is logged above debug, and the raw bytes (headers included) never are', async () => {
    const secret = `Bearer never-logged-${Date.now()}`;
    await exchange(`GET /healthz HTTP/9.9\r\nHost: localhost\r\nAuthorization: ${secret}\r\n\r\n`);
    const log = t.logs.join('');
    expect(log).not.toContain('never-logged');
    expect(log).not.toContain('rawPacket');
    const lines = t.logs.map((line) => JSON.parse(line) as { level: number; msg: string });
    const refusals = lines.filter((line) => line.msg === 'unparsable request refused');
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals.filter((line) => line.level !== 20)).toEqual([]);
    expect(lines.filter((line) => line.level >= 40)).toEqual([]);
  });

  it('a client that drops its connection mid-body is logged as an aborted request at info: no error line, no stack, no database outage', async () => {
    const before = t.logs.length;
    const aborts = 5;
    for (let i = 0; i < aborts; i++) {
      const socket = await open();
      socket.on('error', () => undefined);
      const partial = `{"email":"${uniqueEmail()}",`.slice(0, 18);
      socket.write(
        'POST /api/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
          `Content-Length: 500\r\n\r\n${partial}`,
      );
      // Only once the request is under way (its hooks ran, the body is being read) is it dropped.
      const received = () =>
        t.logs.slice(before).filter((line) => line.includes('"msg":"request received"')).length;
      await waitFor('the request to arrive', () => received() > i);
      socket.destroy();
      const aborted = () =>
        t.logs.slice(before).filter((line) => line.includes('request aborted by the client'))
          .length;
      await waitFor('the abort to be logged', () => aborted() > i);
    }

    const lines = t.logs.slice(before).map((line) => JSON.parse(line) as Record<string, unknown>);
    const abortLines = lines.filter((line) => line.msg === 'request aborted by the client');
    expect(abortLines).toHaveLength(aborts);
    for (const line of abortLines) {
      expect(line).toMatchObject({ level: 30, method: 'POST', route: '/api/login' });
      expect(line).not.toHaveProperty('err');
    }
    expect(lines.filter((line) => (line.level as number) >= 40)).toEqual([]);
    expect(JSON.stringify(lines)).not.toMatch(/database|"stack"/);
  });
});
