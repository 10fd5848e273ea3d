import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

describe.each(backends)('HTTP edges: caching, prototype keys, Expect ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  // RFC 6749 §5.1: a response carrying tokens must not be stored by caches; nor any /api answer.
  // The router decodes percent-escapes (`/%61pi/login` is `/api/login`): the header must follow the
  // route that answered, not the raw URL, or a token response escapes no-store.
  it.each(['/api', '/%61pi'])(
    'token and profile answers under %s carry Cache-Control: no-store',
    async (prefix) => {
      const email = uniqueEmail();
      const post = (path: string, body: unknown) =>
        t.post(`${prefix}${path}`, body, { ip: randomIp() });
      const register = await post('/register', { email, password: STRONG_PASSWORD });
      const login = await post('/login', { email, password: STRONG_PASSWORD });
      const refresh = await post('/refresh-token', { refresh_token: login.json().refresh_token });
      const profile = await t.call('GET', `${prefix}/profile`, {
        token: login.json().access_token,
      });
      const answers = { register, login, refresh, profile };
      expect(Object.values(answers).map((answer) => answer.statusCode)).toEqual([
        201, 200, 200, 200,
      ]);
      expect(
        Object.fromEntries(
          Object.entries(answers).map(([name, answer]) => [name, answer.headers['cache-control']]),
        ),
      ).toEqual({
        register: 'no-store',
        login: 'no-store',
        refresh: 'no-store',
        profile: 'no-store',
      });
    },
  );

  // Answers echo user-written text (chat messages, bios): a browser must never sniff them as HTML.
  it('every answer carries X-Content-Type-Options: nosniff', async () => {
    const account = await t.register(uniqueEmail(), STRONG_PASSWORD);
    const answers = {
      profile: await t.call('GET', '/api/profile', { token: account.accessToken }),
      unauthorized: await t.call('GET', '/api/profile'),
      notFound: await t.call('GET', '/api/nothing-here'),
      invalidJson: await t.app.inject({
        method: 'POST',
        url: '/api/login',
        remoteAddress: randomIp(),
        headers: { 'content-type': 'application/json' },
        payload: '{"email":',
      }),
      health: await t.call('GET', '/healthz'),
      docs: await t.call('GET', '/docs/'),
      // Refused before routing, where no hook runs.
      badEncoding: await t.call('GET', '/api/influencers/%FF'),
      overlongParameter: await t.call('GET', `/api/influencers/${'a'.repeat(200)}`),
    };
    const headers = Object.fromEntries(
      Object.entries(answers).map(([name, r]) => [name, r.headers['x-content-type-options']]),
    );
    expect(headers).toEqual(Object.fromEntries(Object.keys(answers).map((n) => [n, 'nosniff'])));
    expect(answers.badEncoding.headers['cache-control']).toBe('no-store');
    expect(answers.overlongParameter.headers['cache-control']).toBe('no-store');
  });

  // API.md: "Unknown request fields are ignored"; "malformed JSON 400".
  it('a well-formed body with an unknown "__proto__" field is not answered invalid_json', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/login',
      remoteAddress: randomIp(),
      headers: { 'content-type': 'application/json' },
      payload: '{"email":"nobody@example.test","password":"wrong-Password-42","__proto__":{"x":1}}',
    });
    expect(response.json().error).toBe('invalid_credentials');
  });

  // API.md: "Every response body is a JSON object with Content-Type: application/json."
  it('an unsupported Expect header is refused with a JSON body', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as { port: number }).port;
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let received = '';
    socket.on('data', (c) => (received += c.toString('latin1')));
    socket.write(
      'POST /api/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n{}',
    );
    await new Promise((r) => socket.once('close', r));
    const [head = '', body = ''] = received.split('\r\n\r\n', 2);
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 417 Expectation Failed');
    expect(head, body).toMatch(/content-type: application\/json/i);
    expect(head).toMatch(/x-content-type-options: nosniff/i);
    expect(head).toMatch(/x-request-id: [0-9a-f-]{36}\r?$/im); // as every answer
  });
});
