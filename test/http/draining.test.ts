// A request that reaches an instance already shutting down (its headers were still arriving when
// the shutdown began) gets the contract's 503, on every route, and the connection is closed.
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';

/** A connection whose request is sent but for the blank line that ends its headers. */
async function halfSent(port: number, path: string) {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n`);
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
      const port = Number(new URL(await t.listen()).port);
      const request = await halfSent(port, path);
      await new Promise((resolve) => setTimeout(resolve, 20)); // the server has the first lines
      const closing = t.close();
      await new Promise((resolve) => setTimeout(resolve, 10)); // the shutdown has begun
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
