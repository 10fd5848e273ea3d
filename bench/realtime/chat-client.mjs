// One simulated chat app in the load generator: a socket, and API.md's catch-up rule for its one
// conversation. It keeps a `version`; an event with `version` ≤ its own is dropped, its own + 1 is
// applied, a higher one means it missed some, so it pages `changes` since its own. After every
// `ready` and on `resync_required` it refetches the conversation list and `unread`, and pages
// `changes` when the conversation's version moved. Events that arrive while it fetches wait, and
// go through the same rule afterwards.
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { sourceAddress } from './http.mjs';

const MESSAGE_EVENTS = new Set(['message.created', 'message.updated', 'message.deleted']);
const CHANGES_PAGE = 200;
const HANDSHAKE_TIMEOUT_MS = 30_000;

/**
 * @typedef {object} ClientSpec
 * @property {number} index
 * @property {string} userId
 * @property {string} token
 * @property {string} conversationId
 * @property {string} ws     the socket's URL (ws://…/api/chat/ws) on the client's instance
 * @property {string} http   the client's instance (http://…)
 */

/**
 * @typedef {object} ClientEnvironment
 * @property {import('./http.mjs').JsonClient} http
 * @property {(client: ChatClient, frame: any, receivedAt: number) => void} onCreated
 *   every `message.created` frame, as it arrives (for the latency figures)
 */

export class ChatClient {
  /** @param {ClientSpec} spec @param {ClientEnvironment} env */
  constructor(spec, env) {
    this.spec = spec;
    this.env = env;
    this.version = 0;
    /** @type {Map<number, string>} version → message id, as applied */
    this.applied = new Map();
    /** @type {WebSocket | undefined} */
    this.ws = undefined;
    this.stalled = false;
    this.fetching = false;
    this.fetchAgain = false;
    /** @type {any[]} events that arrived during a fetch */
    this.held = [];
    /** Events dropped by the rule (version ≤ own): overtaken, or already fetched. */
    this.stale = 0;
    /** Versions applied a second time: the rule makes this impossible; counted to prove it. */
    this.doubleApplied = 0;
    this.gaps = 0;
    /** @type {Error | undefined} the first failed fetch */
    this.error = undefined;
    /** @type {number | undefined} the socket's close code, if the server closed it */
    this.closedWith = undefined;
  }

  /** Opens the socket; resolves at `ready`. */
  connect() {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.spec.ws, {
        headers: { authorization: `Bearer ${this.spec.token}` },
        localAddress: sourceAddress(this.spec.index),
        perMessageDeflate: false,
        handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      });
      this.ws = ws;
      this.closedWith = undefined;
      let ready = false;
      ws.on('message', (data) => {
        const receivedAt = performance.now();
        const frame = JSON.parse(String(data));
        if (frame.type === 'ready') {
          ready = true;
          return resolve(undefined);
        }
        if (frame.type === 'message.created') this.env.onCreated(this, frame, receivedAt);
        if (MESSAGE_EVENTS.has(frame.type)) this.receive(frame);
        else if (frame.type === 'resync_required') void this.sync(true);
      });
      ws.once('close', (code) => {
        if (this.ws === ws) this.closedWith = code;
        if (!ready) reject(new Error(`closed with ${code} before ready`));
      });
      ws.once('error', (error) => {
        if (!ready) reject(error);
      });
    });
  }

  /** Stops reading: TCP backs up to the server, as with an app that hangs. */
  stall() {
    this.stalled = true;
    this.ws?.pause();
  }

  /** Cuts the connection without a closing handshake (a dropped network). */
  drop() {
    const ws = this.ws;
    this.ws = undefined;
    ws?.terminate();
  }

  /** An event, through the catch-up rule. */
  receive(frame) {
    if (this.fetching) {
      this.held.push(frame);
      return;
    }
    const { version } = frame;
    if (version <= this.version) {
      this.stale += 1;
      return;
    }
    if (version === this.version + 1) {
      this.apply(frame.chat_message);
      return;
    }
    this.gaps += 1;
    this.held.push(frame);
    void this.sync(false);
  }

  /**
   * Catches up from HTTP: after `ready` (`full`: the list and unread too), or on a gap. Resolves
   * when nothing is left to fetch.
   */
  async sync(full) {
    if (this.fetching) {
      this.fetchAgain ||= full;
      return this.fetched;
    }
    this.fetching = true;
    this.fetched = this.fetchAll(full);
    return this.fetched;
  }

  async fetchAll(full) {
    try {
      let listed = full;
      for (;;) {
        this.fetchAgain = false;
        const target = listed ? await this.listedVersion() : Infinity;
        if (target > this.version) await this.pageChanges();
        const held = this.held;
        this.held = [];
        this.fetching = false;
        for (const frame of held) this.receive(frame);
        if (!this.fetchAgain || this.fetching) return;
        this.fetching = true;
        listed = true;
      }
    } catch (error) {
      this.fetching = false;
      this.error ??= /** @type {Error} */ (error);
    }
  }

  /** The conversation list and unread, as after `ready`: the conversation's current version. */
  async listedVersion() {
    const { http, token } = this.request();
    const [list] = await Promise.all([
      http.expect(200, 'GET', `${this.spec.http}/api/chat/conversations?limit=20`, token),
      http.expect(200, 'GET', `${this.spec.http}/api/chat/unread`, token),
    ]);
    const mine = list.conversations.find((c) => c.id === this.spec.conversationId);
    return mine === undefined ? 0 : mine.version;
  }

  async pageChanges() {
    const { http, token } = this.request();
    const base = `${this.spec.http}/api/chat/conversations/${this.spec.conversationId}/changes`;
    for (;;) {
      const url = `${base}?since_version=${this.version}&limit=${CHANGES_PAGE}`;
      const page = await http.expect(200, 'GET', url, token);
      for (const message of page.messages) {
        if (message.version > this.version) this.apply(message);
      }
      this.version = Math.max(this.version, page.version);
      if (!page.has_more) return;
    }
  }

  apply(message) {
    if (this.applied.has(message.version)) this.doubleApplied += 1;
    this.applied.set(message.version, message.id);
    this.version = message.version;
  }

  request() {
    return { http: this.env.http, token: this.spec.token };
  }
}
