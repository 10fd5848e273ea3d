import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { Metrics, OUTBOX_COUNT_WAIT_MS } from '../../src/operations/metrics.js';

const pendingGauge = (text: string) => /^mail_outbox_pending (\d+)$/m.exec(text)?.[1];

// The outbox gauge is a database query inside every scrape. While the database hangs, a query
// answers only at the pool's 10 s timeout: the scrape must not wait for it.
describe('the mail_outbox_pending gauge', () => {
  it('answers within its wait while the count hangs, with the last count, and starts one count at a time', async () => {
    let calls = 0;
    let answer: (count: number) => Promise<number> = async (count) => count;
    const metrics = new Metrics(() => answer(++calls));
    expect(pendingGauge(await metrics.registry.metrics())).toBe('1');

    answer = () => new Promise<number>(() => undefined); // the database hangs
    for (let scrape = 0; scrape < 3; scrape++) {
      const started = performance.now();
      const text = await metrics.registry.metrics();
      expect(performance.now() - started).toBeLessThan(OUTBOX_COUNT_WAIT_MS + 2_000);
      expect(pendingGauge(text)).toBe('1');
      expect(text).toMatch(/^process_cpu_seconds_total /m);
    }
    expect(calls).toBe(2); // the hung count is waited for again, not started again
  });

  it('keeps the last count when the count fails', async () => {
    let fail = false;
    const metrics = new Metrics(async () => {
      if (fail) throw new Error('database away');
      return 7;
    });
    expect(pendingGauge(await metrics.registry.metrics())).toBe('7');
    fail = true;
    expect(pendingGauge(await metrics.registry.metrics())).toBe('7');
  });
});

// Prometheus wants seconds (the metric's name says so); Fastify's elapsedTime is milliseconds.
describe('http_request_duration_seconds', () => {
  it('records a response in seconds: 2500 ms falls in the 2.5 s bucket, not the 1 s one', async () => {
    const metrics = new Metrics(async () => 0);
    const request = { method: 'GET', routeOptions: { url: '/api/profile' } };
    const reply = { statusCode: 200, elapsedTime: 2_500 };
    metrics.observeResponse(request as FastifyRequest, reply as FastifyReply);
    const text = await metrics.registry.metrics();
    const series = (name: string, le?: string) =>
      new RegExp(
        `^http_request_duration_seconds_${name}\\{${le === undefined ? '' : `le="${le}",`}method="GET",route="/api/profile",status="200"\\} (\\S+)$`,
        'm',
      ).exec(text)?.[1];
    expect(series('sum')).toBe('2.5');
    expect(series('bucket', '1')).toBe('0');
    expect(series('bucket', '2.5')).toBe('1');
    expect(series('count')).toBe('1');
  });
});

// API.md, /metrics: "events published": one per recipient channel (a message goes to both members).
describe('chat_events_published_total', () => {
  it('counts an event once per recipient it is published to', async () => {
    const metrics = new Metrics(async () => 0);
    metrics.realtime.eventPublished('message.created', 2);
    metrics.realtime.eventPublished('message.created', 1);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^chat_events_published_total\{type="message\.created"\} 3$/m);
  });
});
