import { afterAll, beforeAll, describe, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp } from '../helpers/test-app.js';

describe.each(backends.slice(0, 1))('explore ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('prints', async () => {
    const a = await t.register();
    const tok = { authorization: `Bearer ${a.accessToken}` };
    const cases: [string, string, Record<string, string>, string | undefined][] = [
      ['HEAD', '/api/sessions', {}, undefined],
      ['HEAD', '/api/sessions', tok, undefined],
      [
        'OPTIONS',
        '/api/login',
        { origin: 'https://x.test', 'access-control-request-method': 'POST' },
        undefined,
      ],
      ['GET', '/api/login', {}, undefined],
      ['GET', '/api/login/', {}, undefined],
      ['POST', '/api/login/', { 'content-type': 'application/json' }, '{}'],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/json; charset=latin1' },
        '{"email":"a@b.test","password":"x"}',
      ],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/json; charset=utf-16' },
        '{"email":"a@b.test","password":"x"}',
      ],
      [
        'POST',
        '/api/login',
        { 'content-type': 'APPLICATION/JSON' },
        '{"email":"a@b.test","password":"x"}',
      ],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/json-patch+json' },
        '{"email":"a@b.test","password":"x"}',
      ],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/jsonx' },
        '{"email":"a@b.test","password":"x"}',
      ],
      ['POST', '/api/login', { 'content-type': ';;;' }, '{"email":"a@b.test","password":"x"}'],
      ['POST', '/api/login', { 'content-type': '' }, '{"email":"a@b.test","password":"x"}'],
      ['POST', '/api/login', {}, '{"email":"a@b.test","password":"x"}'],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/json' },
        '\uFEFF{"email":"a@b.test","password":"x"}',
      ],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/json' },
        '{"email":"a@b.test","password":"x","__proto__":{"x":1}}',
      ],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/json' },
        '{"email":"a@b.test","password":"x","constructor":{"prototype":{"x":1}}}',
      ],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/json' },
        '{"email":"a@b.test","password":"x","pad":' + '['.repeat(8000) + ']'.repeat(8000) + '}',
      ],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/json' },
        '{"email":"a@b.test","password":"x","n":1e400}',
      ],
      ['POST', '/api/login', { 'content-type': 'application/json' }, ''],
      ['POST', '/api/login', { 'content-type': 'application/json' }, '   '],
      ['POST', '/api/login', { 'content-type': 'multipart/form-data; boundary=x' }, '--x--'],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        '{"email":"a@b.test","password":"x"}',
      ],
      ['GET', '/api/influencers?limit=1&limit=2', {}, undefined],
      ['GET', '/api/influencers?sort=name&sort=newest', {}, undefined],
      ['GET', '/api/influencers?limit[]=1', {}, undefined],
      ['GET', '/api/influencers?__proto__=1', {}, undefined],
      ['GET', '/api/influencers?q=', {}, undefined],
      ['GET', '/api/influencers?q=%20%20', {}, undefined],
      ['GET', '/api/influencers?cursor=', {}, undefined],
      ['GET', '/api/influencers?cursor=a.b', {}, undefined],
      ['GET', '/api/influencers?q=%ZZ', {}, undefined],
      ['GET', '/api/influencers/%00', {}, undefined],
      ['GET', '/api/influencers/%ZZ', {}, undefined],
      ['GET', '/api/influencers/categories/', {}, undefined],
      ['DELETE', '/api/influencers/categories', tok, undefined],
      ['GET', '/api/chat/ws', {}, undefined],
      ['POST', '/api/chat/ws', {}, undefined],
      ['GET', '/api/chat/conversations?limit=5&unread_only=true&unread_only=false', tok, undefined],
      ['GET', '/docs/nope', {}, undefined],
      ['GET', '/docs/json', {}, undefined],
      ['GET', '/docs', {}, undefined],
      ['GET', '/metrics/', {}, undefined],
      ['GET', '/healthz?x=1', {}, undefined],
      ['POST', '/healthz', {}, undefined],
      ['GET', '/', {}, undefined],
      ['GET', '/api', {}, undefined],
      ['GET', '/api/', {}, undefined],
      ['GET', '//api/sessions', tok, undefined],
      ['GET', '/api//sessions', tok, undefined],
      ['GET', '/api/%73essions', tok, undefined],
      ['GET', '/API/sessions', tok, undefined],
      ['GET', '/api/sessions;x', tok, undefined],
      ['GET', '/.well-known/jwks.json', {}, undefined],
      ['POST', '/api/logout', { ...tok, 'content-type': 'application/json' }, 'null'],
      [
        'POST',
        '/api/chat/conversations/x/read',
        { ...tok, 'content-type': 'application/json' },
        '{"seq":1e400}',
      ],
      [
        'POST',
        '/api/login',
        { 'content-type': 'application/json', authorization: 'Bearer x' },
        '{"email":"a@b.test","password":"x"}',
      ],
      ['GET', '/api/influencers/categories', { authorization: '' }, undefined],
      ['GET', '/api/influencers/categories', { authorization: 'Basic abc' }, undefined],
      ['TRACE', '/api/login', {}, undefined],
      ['PROPFIND', '/api/login', {}, undefined],
      [
        'GET',
        '/api/sessions',
        { authorization: `Bearer ${a.accessToken}`, 'content-type': 'text/plain' },
        'hello',
      ],
      [
        'DELETE',
        '/api/sessions/x',
        { authorization: `Bearer ${a.accessToken}`, 'content-type': 'text/plain' },
        'hello',
      ],
      [
        'GET',
        '/api/sessions',
        { authorization: `Bearer ${a.accessToken}`, 'content-type': 'application/json' },
        '{bad',
      ],
    ];
    for (const [method, url, headers, payload] of cases) {
      try {
        const r = await t.app.inject({
          method: method as 'GET',
          url,
          headers,
          remoteAddress: randomIp(),
          ...(payload !== undefined && { payload }),
        });
        const h = r.headers;
        console.log(
          `${method} ${url.slice(0, 80)} [${JSON.stringify(headers).slice(0, 80)}] -> ${r.statusCode} ct=${h['content-type']} allow=${h.allow ?? ''} cc=${h['cache-control'] ?? ''} body=${r.body.slice(0, 160)}`,
        );
      } catch (e) {
        console.log(`${method} ${url} THREW ${String(e)}`);
      }
    }
  });
});
