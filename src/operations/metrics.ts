import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { RealtimeMetrics } from './realtime-metrics.js';

/** How long a scrape waits for the outbox's count before it shows the last one. */
export const OUTBOX_COUNT_WAIT_MS = 500;

/**
 * `count`, answered within OUTBOX_COUNT_WAIT_MS or undefined (also when it fails); a count still
 * running is waited for again, not started twice, so a hung database holds one connection.
 */
function latestCount(count: () => Promise<number>): () => Promise<number | undefined> {
  let running: Promise<number | undefined> | undefined;
  return async () => {
    running ??= count()
      .catch(() => undefined)
      .finally(() => (running = undefined));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), OUTBOX_COUNT_WAIT_MS);
    });
    try {
      return await Promise.race([running, late]);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Prometheus metrics of one app instance (its own registry, so tests can run several apps). */
export class Metrics {
  readonly registry = new Registry();
  readonly realtime = new RealtimeMetrics(this.registry);
  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  private readonly hashing = new Histogram({
    name: 'password_hash_duration_seconds',
    help: 'argon2id time per operation (hash or verify).',
    labelNames: ['operation'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  constructor(outboxDepth: () => Promise<number>) {
    collectDefaultMetrics({ register: this.registry });
    const countOutbox = latestCount(outboxDepth);
    new Gauge({
      name: 'mail_outbox_pending',
      help: 'E-mails waiting in the outbox (not yet delivered, not given up), of the whole deployment: every instance reports the same count (aggregate with max, not sum).',
      registers: [this.registry],
      async collect() {
        // While the database is away or hangs, the gauge keeps its last value: the scrape, every
        // other metric included, must neither fail nor wait for it (a hung connection answers
        // only at the pool's 10 s query timeout, Prometheus's default scrape timeout).
        const depth = await countOutbox();
        if (depth !== undefined) this.set(depth);
      },
    });
  }

  observeHash = (operation: 'hash' | 'verify', seconds: number): void => {
    this.hashing.observe({ operation }, seconds);
  };

  /** Counts and times every response, labelled by route pattern (never the raw URL). */
  instrument(app: FastifyInstance): void {
    app.addHook('onResponse', async (request, reply) => this.observeResponse(request, reply));
  }

  /** One answered request (also those Fastify refuses before routing: no hook runs for them). */
  observeResponse(request: FastifyRequest, reply: FastifyReply): void {
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    };
    this.requests.inc(labels);
    this.latency.observe(labels, reply.elapsedTime / 1000);
  }
}

export async function metricsRoutes(app: FastifyInstance, { metrics }: { metrics: Metrics }) {
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
}
