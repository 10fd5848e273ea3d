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
