import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';

/**
 * API.md: "Every response body is a JSON object with Content-Type: application/json." A client
 * that offers an HTTP/2 upgrade (what `curl --http2 http://…` sends on its first request) gets the
 * ordinary answer (RFC 9110 §7.8: a server may ignore Upgrade), and a broken WebSocket handshake a
 * JSON error, not the `ws` library's HTML. Needs Node 22.21+ or 24.9+ (shouldUpgradeCallback).
 */
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
const canChoose = major > 24 || (major === 24 && minor >= 9) || (major === 22 && minor >= 21);

describe.skipIf(!canChoose).each(backends)(
  'Upgrade headers other than websocket ($name)',
  (backend) => {
    let t: TestApp;
    let port: number;
    beforeAll(async () => {
      t = await TestApp.start(backend);
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.server.address() as { port: number }).port;
    });
    afterAll(() => t.close());

    async function exchange(
      bytes: string,
    ): Promise<{ status: number; head: string; body: string }> {
      const socket = connect(port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      socket.on('error', () => undefined);
      let received = '';
      socket.on('data', (c) => (received += c.toString('latin1')));
      socket.write(bytes);
      await Promise.race([
        new Promise((r) => socket.once('close', r)),
        new Promise((r) => setTimeout(r, 3000)),
      ]);
      socket.destroy();
      const [head = '', body = ''] = received.split('\r\n\r\n', 2);
      return { status: Number(head.split(' ')[1]), head, body };
    }

    const h2c =
      'Connection: Upgrade, HTTP2-Settings, close\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n';

    it('GET /healthz with an h2c upgrade offer is answered 200 {status:"ok"}', async () => {
      const response = await exchange(`GET /healthz HTTP/1.1\r\nHost: a\r\n${h2c}\r\n`);
      expect(response.head, response.body).toMatch(/content-type: application\/json/i);
      expect(response.status, response.body).toBe(200);
    });

    it('POST /api/login with an h2c upgrade offer is answered in JSON', async () => {
      const body = '{"email":"nobody@example.test","password":"wrong-Password-42"}';
      const response = await exchange(
        `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${h2c}\r\n${body}`,
      );
      expect(response.head, response.body).toMatch(/content-type: application\/json/i);
      expect(response.status, response.body).toBe(401);
    });

    it('a broken WebSocket handshake on /api/chat/ws is refused in JSON (426 upgrade_required)', async () => {
      const response = await exchange(
        'GET /api/chat/ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade, close\r\nSec-WebSocket-Version: 13\r\n\r\n',
      );
      expect(response.status).toBe(426);
      expect(response.head, response.body).toMatch(/content-type: application\/json/i);
    });
  },
);
