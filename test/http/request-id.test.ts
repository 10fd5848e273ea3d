import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface LogLine {
  msg: string;
  reqId?: string;
  status?: number;
}

// Every answer names its log line: a user or a client quotes X-Request-Id, an operator finds the
// line, on whichever instance it was served (a UUID, not Fastify's per-process counter).
describe.each(backends)('X-Request-Id ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const completed = () =>
    t.logs
      .flatMap((chunk) => chunk.split('\n').filter(Boolean))
      .map((line) => JSON.parse(line) as LogLine)
      .filter((line) => line.msg === 'request completed');

  it('is on every answer, a fresh UUID, and the reqId of its log line', async () => {
    const answers = [
      await t.call('GET', '/healthz'),
      await t.call('GET', '/api/profile'), // 401
      await t.call('GET', '/api/nowhere'), // 404
      await t.call('GET', '/healthz', { headers: { 'x-request-id': 'chosen-by-the-client' } }),
    ];
    const ids = answers.map((answer) => answer.headers['x-request-id'] as string);
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);
    const logged = new Map(completed().map((line) => [line.reqId, line.status]));
    expect(ids.map((id) => logged.get(id))).toEqual([200, 401, 404, 200]);
  });
});
