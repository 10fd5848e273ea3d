// The sends of the real-time scenarios, in the load generator: POST …/messages at a fixed rate
// (open loop: the schedule does not wait for answers), round-robin over the conversations and
// alternating their two members, each through the sender's own instance. For each message it
// stamps when the `201` arrived and when the peer's socket got `message.created`; the difference
// is the latency the scenarios report. It also keeps every stored message per conversation, for
// the check that every client ends with exactly those.
import { performance } from 'node:perf_hooks';

const TICK_MS = 5;
/** What a 2,000-character message would be is beside the point here: a short chat line. */
const TEXT = 'Real-time benchmark message, about the length of a line of chat.';

/**
 * @typedef {object} SendRecord
 * @property {string} conversationId
 * @property {number} version
 * @property {number} sentAt       performance.now() when the POST was handed to the connection pool
 * @property {number} answeredAt   performance.now() at the 201
 * @property {boolean} measured    sent inside the measurement window
 * @property {number | undefined} peerAt   performance.now() when the peer's socket got it
 * @property {import('./chat-client.mjs').ChatClient} peer
 */

export class SendLoad {
  /**
   * @param {import('./http.mjs').JsonClient} http
   * @param {string} runTag   keeps client_message_ids unique across runs
   */
  constructor(http, runTag) {
    this.http = http;
    this.runTag = runTag;
    this.sequence = 0;
    /** @type {Map<string, SendRecord>} by message id */
    this.records = new Map();
    /** @type {Map<string, Map<number, string>>} conversation → version → message id */
    this.stored = new Map();
    /** @type {Map<string, number>} peer receipts that came before the 201 was read */
    this.early = new Map();
    this.measuring = false;
    /** @type {number[]} the 201 → the peer's socket (0 when the socket was first) */
    this.latencies = [];
    /** @type {number[]} the POST sent → the peer's socket */
    this.endToEnd = [];
    /** @type {number[]} the POST sent → its 201 */
    this.answers = [];
    this.beforeAnswer = 0;
    /** @type {Record<string, number>} answers other than 201, by status */
    this.refused = {};
    this.inFlight = 0;
    this.maxInFlight = 0;
    /** @type {NodeJS.Timeout | undefined} */
    this.timer = undefined;
    this.pending = new Set();
  }

  /**
   * Sends `rate` messages a second until stop(), over `pairs` (the two members' clients of each
   * conversation).
   * @param {[import('./chat-client.mjs').ChatClient, import('./chat-client.mjs').ChatClient][]} pairs
   * @param {number} rate
   */
  start(pairs, rate) {
    const started = performance.now();
    let due = 0;
    let k = 0;
    this.timer = setInterval(() => {
      due = Math.floor(((performance.now() - started) / 1000) * rate);
      for (; k < due; k++) {
        const pair = pairs[k % pairs.length];
        this.send(pair[Math.floor(k / pairs.length) % 2]);
      }
    }, TICK_MS);
  }

  /** Stops sending and waits for the answers still on their way. */
  async stop() {
    clearInterval(this.timer);
    await Promise.allSettled([...this.pending]);
  }

  /** Latency samples count only for messages sent from now until stopMeasuring(). */
  startMeasuring() {
    this.measuring = true;
    this.latencies = [];
    this.endToEnd = [];
    this.answers = [];
    this.beforeAnswer = 0;
  }

  stopMeasuring() {
    this.measuring = false;
  }

  /** @param {import('./chat-client.mjs').ChatClient} sender */
  send(sender) {
    const { conversationId, token, http: base } = sender.spec;
    const measured = this.measuring;
    const sentAt = performance.now();
    const body = {
      client_message_id: `${this.runTag}-${(this.sequence++).toString(36)}`,
      text: TEXT,
    };
    const url = `${base}/api/chat/conversations/${conversationId}/messages`;
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const sending = this.http
      .call('POST', url, token, body)
      .then(({ status, body: answer }) => {
        if (status !== 201) {
          this.refused[status] = (this.refused[status] ?? 0) + 1;
          return;
        }
        const at = { sentAt, answeredAt: performance.now() };
        this.answered(answer.chat_message, sender.peer, measured, at);
      })
      .catch(() => {
        this.refused.network = (this.refused.network ?? 0) + 1;
      })
      .finally(() => {
        this.inFlight -= 1;
        this.pending.delete(sending);
      });
    this.pending.add(sending);
  }

  answered(message, peer, measured, { sentAt, answeredAt }) {
    if (measured) this.answers.push(answeredAt - sentAt);
    /** @type {SendRecord} */
    const record = {
      peer,
      conversationId: message.conversation_id,
      version: message.version,
      sentAt,
      answeredAt,
      measured,
      peerAt: this.early.get(message.id),
    };
    this.early.delete(message.id);
    this.records.set(message.id, record);
    let versions = this.stored.get(record.conversationId);
    if (versions === undefined) this.stored.set(record.conversationId, (versions = new Map()));
    versions.set(message.version, message.id);
    if (record.peerAt !== undefined) this.sample(record);
  }

  /**
   * A `message.created` on a client's socket. Only the peer's receipt counts (the sender's own
   * sockets get it too), and not a stalled client's.
   * @param {import('./chat-client.mjs').ChatClient} client
   */
  delivered(client, frame, receivedAt) {
    const message = frame.chat_message;
    if (message.sender_id === client.spec.userId || client.stalled) return;
    const record = this.records.get(message.id);
    if (record === undefined) {
      this.early.set(message.id, receivedAt);
      return;
    }
    if (record.peerAt !== undefined) return;
    record.peerAt = receivedAt;
    this.sample(record);
  }

  sample(record) {
    if (!record.measured) return;
    const peerAt = /** @type {number} */ (record.peerAt);
    const latency = peerAt - record.answeredAt;
    if (latency < 0) this.beforeAnswer += 1;
    this.latencies.push(Math.max(0, latency));
    this.endToEnd.push(peerAt - record.sentAt);
  }

  /** Messages of the window that a peer listening all along has not received. */
  undelivered() {
    let count = 0;
    for (const record of this.records.values()) {
      const listening = record.peer.ws !== undefined && !record.peer.stalled;
      if (record.measured && record.peerAt === undefined && listening) count += 1;
    }
    return count;
  }
}

/** p50/p99/max of `samples` (ms), rounded to 0.01. */
export function percentiles(samples) {
  const sorted = Float64Array.from(samples).sort();
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const r = (v) => Math.round(v * 100) / 100;
  return {
    samples: sorted.length,
    p50_ms: r(at(0.5)),
    p90_ms: r(at(0.9)),
    p99_ms: r(at(0.99)),
    max_ms: r(sorted[sorted.length - 1] ?? 0),
  };
}
