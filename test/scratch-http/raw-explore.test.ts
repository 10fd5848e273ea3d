import { connect } from 'node:net';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';

describe.each(backends.slice(0, 1))('raw ($name)', (backend) => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await TestApp.start(backend);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(() => t.close());

  async function exchange(chunks: (string | Buffer)[], waitMs = 1500): Promise<string> {
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.on('error', () => undefined);
    let received = '';
    socket.on('data', (c) => (received += c.toString('latin1')));
    for (const c of chunks) {
      socket.write(c);
      await new Promise((r) => setTimeout(r, 50));
    }
    await Promise.race([
      new Promise((r) => socket.once('close', r)),
      new Promise((r) => setTimeout(r, waitMs)),
    ]);
    socket.destroy();
    return received;
  }

  it('prints', async () => {
    const big = 'x'.repeat(20_000);
    const chunk = (s: string) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
    const cases: [string, (string | Buffer)[]][] = [
      [
        'chunked over limit',
        [
          `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
          chunk(`{"email":"a@b.test","password":"${big}"}`),
          '0\r\n\r\n',
        ],
      ],
      [
        'chunked over limit, then pipelined GET',
        [
          `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
          chunk(`{"email":"a@b.test","password":"${big}"}`),
          '0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n',
        ],
      ],
      [
        'expect 100 over limit',
        [
          `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 20000\r\nExpect: 100-continue\r\n\r\n`,
        ],
      ],
      [
        'expect 100 ok',
        [
          `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n`,
          '{}',
        ],
      ],
      [
        'expect weird',
        [
          `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 200-ok\r\n\r\n`,
          '{}',
        ],
      ],
      ['HEAD sessions', [`HEAD /api/sessions HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`]],
      [
        'content-length bad',
        [
          `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}`,
        ],
      ],
      [
        'content-length short',
        [
          `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 1\r\nConnection: close\r\n\r\n{}`,
        ],
      ],
      ['long url', [`GET /api/${'a'.repeat(70000)} HTTP/1.1\r\nHost: a\r\n\r\n`]],
      [
        'absolute-form',
        [`GET http://evil.test/healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`],
      ],
      ['asterisk OPTIONS', [`OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`]],
      ['CONNECT', [`CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n`]],
      ['no path', [`GET healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`]],
      ['two hosts', [`GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n`]],
      [
        'two content-length',
        [
          `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
        ],
      ],
      [
        'two content-types',
        [
          `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
        ],
      ],
      [
        'gzip body',
        [
          `POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
        ],
      ],
      [
        'http 1.0 post',
        [
          `POST /api/login HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
        ],
      ],
      [
        'upgrade h2c',
        [`GET /healthz HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nConnection: Upgrade, close\r\n\r\n`],
      ],
      [
        'upgrade ws on other path',
        [
          `GET /healthz HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        ],
      ],
      [
        'upgrade ws on api 404',
        [
          `GET /api/nothing HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        ],
      ],
      [
        'upgrade ws on login',
        [
          `GET /api/sessions HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        ],
      ],
      [
        'upgrade ws bad version',
        [
          `GET /api/chat/ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: x\r\nSec-WebSocket-Version: 99\r\n\r\n`,
        ],
      ],
      [
        'upgrade ws POST',
        [
          `POST /api/chat/ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        ],
      ],
    ];
    for (const [name, chunks] of cases) {
      const out = await exchange(chunks);
      console.log(`=== ${name}\n${out.slice(0, 600).replace(/\r/g, '')}`);
    }
  }, 120_000);
});
