// A request that reaches an instance already shutting down (its headers were still arriving when
// the shutdown began) gets the contract's 503, on every route, and the connection is closed.
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';

/** Resolves once `ready()` holds, checked every 5 ms; fails after 5 s. */
async function until(ready: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !ready(); waited += 5) {
    if (waited > 5_000) throw new Error(`not within 5 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A connection whose request is sent but for the blank line that ends its headers. */
async function halfSent(t: TestApp, path: string, headers = '') {
  const port = Number(new URL(await t.listen()).port);
  let received: Socket | undefined;
  t.app.server.once('connection', (socket: Socket) => (received = socket));
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  await new Promise((resolve) => socket.once('connect', resolve));
  const firstLines = `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${headers}`;
  socket.write(firstLines);
  // Read by the server (its HTTP parser has them): the connection is no longer idle, so the
  // shutdown does not just close it.
  await until(() => (received?.bytesRead ?? 0) >= firstLines.length, 'the first lines read');
  return {
    finish: () => socket.write('\r\n'),
    answer: async () => {
      await closed;
      return text;
    },
  };
}

describe.each(backends)('requests arriving while the instance shuts down ($name)', (backend) => {
  it.each(['/readyz', '/healthz', '/api/profile'])(
    '%s answers 503 unavailable with the error body, and closes the connection',
    async (path) => {
      const t = await TestApp.start(backend);
      const request = await halfSent(t, path);
      const closing = t.close();
      // The server stops listening after the preClose hooks (the drain's among them) have run.
      await until(() => !t.app.server.listening, 'the shutdown to begin');
      request.finish();
      await closing;
      const [head = '', body] = (await request.answer()).split('\r\n\r\n');
      expect(head.split('\r\n')[0]).toBe('HTTP/1.1 503 Service Unavailable');
      expect(head.toLowerCase()).toContain('connection: close');
      expect(JSON.parse(body ?? '')).toEqual({
        message: 'The service is temporarily unavailable; try again shortly.',
        error: 'unavailable',
      });
    },
  );
});

// A rolling deploy: a page of another origin must read the draining instance's 503 to retry.
describe.each(backends)('a draining instance, CORS_ORIGINS set ($name)', (backend) => {
  it("lets a listed page read the 503: the CORS hook runs before the drain's", async () => {
    const origin = 'https://app.example.test';
    const t = await TestApp.start(backend, { env: { CORS_ORIGINS: origin } });
    const request = await halfSent(t, '/api/profile', `Origin: ${origin}\r\n`);
    const closing = t.close();
    await until(() => !t.app.server.listening, 'the shutdown to begin');
    request.finish();
    await closing;
    const head = ((await request.answer()).split('\r\n\r\n')[0] ?? '').toLowerCase();
    expect(head.split('\r\n')[0]).toBe('http/1.1 503 service unavailable');
    expect(head).toContain(`access-control-allow-origin: ${origin}`);
  });
});

// A request already past the drain's check when the shutdown begins is served; its answer then
// asks the client to reconnect (elsewhere), so that its keep-alive connection does not hold the
// shutdown open.
describe.each(backends)(
  'a request in flight when the instance begins to shut down ($name)',
  (backend) => {
    it('is answered as usual, with Connection: close', async () => {
      const t = await TestApp.start(backend, { env: { LOG_LEVEL: 'debug' } });
      const port = Number(new URL(await t.listen()).port);
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      await new Promise((resolve) => socket.once('connect', resolve));
      // Its headers, not yet its body: the onRequest hooks run (the drain's first, then the log's),
      // then the request waits for the body.
      socket.write(
        'POST /api/forgot-password HTTP/1.1\r\nHost: localhost\r\n' +
          'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n',
      );
      const received = () =>
        t.logs.some((line) => {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          return entry.msg === 'request received' && entry.url === '/api/forgot-password';
        });
      await until(received, 'the request to pass its onRequest hooks');
      const closing = t.close();
      await until(() => !t.app.server.listening, 'the shutdown to begin');
      socket.write('{}');
      try {
        const complete = () => {
          const [head, body] = text.split('\r\n\r\n', 2);
          const length = /content-length: (\d+)/i.exec(head ?? '')?.[1];
          return length !== undefined && Buffer.byteLength(body ?? '') >= Number(length);
        };
        await until(complete, 'the whole answer');
        const [head = '', body = ''] = text.split('\r\n\r\n');
        expect(head.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
        expect(JSON.parse(body).error).toBe('validation_failed');
        expect(head.toLowerCase()).toContain('connection: close');
        await closed; // the server closed it: the client did not have to
      } finally {
        socket.destroy();
        await closing;
      }
    });
  },
);
