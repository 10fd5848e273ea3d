// JSON over HTTP/1.1 for the load generator: keep-alive connections spread over several 127.0.0.x
// source addresses (one agent each), so that no address pair runs out of ephemeral ports and the
// connection count stays bounded whatever the number of simulated clients.
import { Buffer } from 'node:buffer';
import { Agent, request } from 'node:http';

/** Source addresses: 127.0.0.1 … 127.0.0.8 (all of 127/8 is loopback on Linux). */
export const SOURCE_ADDRESSES = 8;
export const sourceAddress = (i) => `127.0.0.${1 + (i % SOURCE_ADDRESSES)}`;

/** An answer slower than this is a failure (a hung request must not hang the benchmark). */
const REQUEST_TIMEOUT_MS = 30_000;

export class JsonClient {
  /** @param {number} connections  kept-alive connections in all */
  constructor(connections) {
    const perAgent = Math.max(1, Math.ceil(connections / SOURCE_ADDRESSES));
    this.agents = Array.from(
      { length: SOURCE_ADDRESSES },
      (_, i) =>
        new Agent({ keepAlive: true, maxSockets: perAgent, localAddress: sourceAddress(i) }),
    );
    this.next = 0;
  }

  /**
   * @param {'GET' | 'POST'} method
   * @param {string} url     absolute
   * @param {string} token   bearer
   * @param {unknown} [body]
   * @returns {Promise<{ status: number, body: any }>}
   */
  call(method, url, token, body) {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers = { authorization: `Bearer ${token}` };
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(payload);
    }
    const agent = this.agents[this.next++ % this.agents.length];
    return new Promise((resolve, reject) => {
      const req = request(url, { method, headers, agent }, (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({
              status: res.statusCode ?? 0,
              body: text === '' ? undefined : JSON.parse(text),
            });
          } catch (error) {
            reject(error);
          }
        });
        res.on('error', reject);
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () =>
        req.destroy(new Error(`${method} ${url}: timed out`)),
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Like call, but anything other than `expected` is an error. */
  async expect(expected, method, url, token, body) {
    const response = await this.call(method, url, token, body);
    if (response.status !== expected) {
      throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(response.body)}`);
    }
    return response.body;
  }

  close() {
    for (const agent of this.agents) agent.destroy();
  }
}
