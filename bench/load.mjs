// One autocannon load against the service: every request gets its own X-Forwarded-For address
// (the service runs with TRUST_PROXY=true), so the per-IP limits stay on — their cost is part of
// every figure — without throttling the benchmark.
import autocannon from 'autocannon';

/** Addresses per pool: 10.0.0.0/20. 300 auth requests per IP and minute allow ~20,000 req/s. */
const IP_POOL_SIZE = 4096;

/** @param {number} [offset] where in the pool to start (loads running at once use different ones) */
export function ipPool(offset = 0) {
  let next = offset;
  return () => {
    const i = next++ % IP_POOL_SIZE;
    return `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`;
  };
}

/**
 * @typedef {object} RequestSpec
 * @property {'GET' | 'POST'} method
 * @property {string} path
 * @property {Record<string, string>} [headers]
 * @property {string} [body]
 * @property {(req: { path: string, headers: Record<string, string>, body?: string }, context: Record<string, unknown>) => void} [setup]
 *   fills in the per-request parts (path, body, authorization)
 * @property {(status: number, body: string, context: Record<string, unknown>) => void} [onResponse]
 */

/**
 * @typedef {object} Expectation
 * @property {number} status           the answer this scenario should get
 * @property {string} [error]          and, for an error answer, its `error` code
 */

/**
 * @typedef {object} LoadOptions
 * @property {string} url
 * @property {number} durationSeconds
 * @property {number} connections
 * @property {number} [overallRate]    requests per second over all connections (default: as fast as possible)
 * @property {number} [ipOffset]
 * @property {RequestSpec} request
 * @property {Expectation} expect
 * @property {number[]} [latencies]   when given, every response's latency (ms) is appended to it
 *   (to combine slices)
 */

/**
 * @typedef {object} LoadResult
 * @property {number} requests_per_second
 * @property {number} duration_s
 * @property {number} p50_ms
 * @property {number} p99_ms
 * @property {number} responses
 * @property {number} sent          requests sent (the last ones may still be in flight at the end)
 * @property {number} expected      responses with the expected status (and error code)
 * @property {number} unexpected    every other response, plus connection errors and timeouts
 * @property {number} errors        connection errors, timeouts included
 * @property {Record<string, number>} unexpected_by_status
 * @property {number} timeouts
 */

/** @param {LoadOptions} options @returns {Promise<LoadResult>} */
export async function runLoad(options) {
  const { request, expect } = options;
  const nextIp = ipPool(options.ipOffset);
  const errorMarker = expect.error ? `"error":"${expect.error}"` : undefined;
  let expected = 0;
  /** @type {Record<string, number>} */
  const unexpectedByStatus = {};
  /** @type {number[]} */
  const latencies = [];
  const headers = { ...request.headers };
  if (request.method === 'POST') headers['content-type'] = 'application/json';

  const requests = [
    {
      method: request.method,
      path: request.path,
      headers,
      body: request.body,
      setupRequest(req, context) {
        request.setup?.(req, context);
        req.headers['x-forwarded-for'] = nextIp();
        return req;
      },
      onResponse(status, body, context) {
        const ok = status === expect.status && (!errorMarker || body.includes(errorMarker));
        if (ok) expected += 1;
        else unexpectedByStatus[status] = (unexpectedByStatus[status] ?? 0) + 1;
        request.onResponse?.(status, body, context);
      },
    },
  ];

  const result = await new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.durationSeconds,
        overallRate: options.overallRate,
        timeout: 10,
        requests,
      },
      (error, value) => (error ? reject(error) : resolve(value)),
    );
    instance.on('response', (_client, _status, _bytes, ms) => latencies.push(ms));
  });

  if (options.latencies) for (const ms of latencies) options.latencies.push(ms);
  const unexpectedResponses = Object.values(unexpectedByStatus).reduce((a, b) => a + b, 0);
  return {
    requests_per_second: Math.round((result.requests.total / result.duration) * 10) / 10,
    duration_s: result.duration,
    ...percentiles(latencies),
    responses: result.requests.total,
    sent: result.requests.sent,
    expected,
    unexpected: unexpectedResponses + result.errors, // autocannon's errors include timeouts
    unexpected_by_status: unexpectedByStatus,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

/**
 * One figure from loads run one after another (slices of one scenario).
 * @param {LoadResult[]} parts
 * @param {number[]} latencies  every response's latency over all parts
 * @returns {LoadResult}
 */
export function combineLoads(parts, latencies) {
  const sum = (pick) => parts.reduce((total, part) => total + pick(part), 0);
  /** @type {Record<string, number>} */
  const byStatus = {};
  for (const part of parts) {
    for (const [status, count] of Object.entries(part.unexpected_by_status)) {
      byStatus[status] = (byStatus[status] ?? 0) + count;
    }
  }
  const seconds = sum((p) => p.duration_s);
  return {
    requests_per_second: Math.round((sum((p) => p.responses) / seconds) * 10) / 10,
    duration_s: Math.round(seconds * 100) / 100,
    ...percentiles(latencies),
    responses: sum((p) => p.responses),
    sent: sum((p) => p.sent),
    expected: sum((p) => p.expected),
    unexpected: sum((p) => p.unexpected),
    unexpected_by_status: byStatus,
    errors: sum((p) => p.errors),
    timeouts: sum((p) => p.timeouts),
  };
}

/** p50 and p99 of response latencies, in ms. @param {number[]} latencies */
function percentiles(latencies) {
  const sorted = Float64Array.from(latencies).sort();
  const at = (p) => {
    if (sorted.length === 0) return 0;
    const value = sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
    return Math.round(value * 100) / 100;
  };
  return { p50_ms: at(50), p99_ms: at(99) };
}
