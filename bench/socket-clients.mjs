// The chat-socket load generator, in a process of its own (forked by bench/sockets.mjs): opens one
// authenticated WebSocket per token it is given, spread over several 127.0.0.x source addresses so
// no single address pair runs out of ephemeral ports, and reports once all of them said `ready`.
import WebSocket from 'ws';

const SOURCE_ADDRESSES = 8;
const CONCURRENCY = 64;

/** @type {WebSocket[]} */
const sockets = [];

/** @param {string} url @param {string} token @param {number} i */
function open(url, token, i) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${token}` },
      localAddress: `127.0.0.${1 + (i % SOURCE_ADDRESSES)}`,
    });
    ws.once('message', (data) => {
      const frame = JSON.parse(String(data));
      if (frame.type === 'ready') resolve(ws);
      else reject(new Error(`expected ready, got ${frame.type}`));
    });
    ws.once('close', (code) => reject(new Error(`closed with ${code} before ready`)));
    ws.once('error', reject);
    sockets.push(ws);
  });
}

process.on(
  'message',
  async (/** @type {{ url: string, tokens: string[] } | 'close'} */ message) => {
    if (message === 'close') {
      for (const ws of sockets) ws.terminate();
      process.send?.({ closed: true }, () => process.exit(0));
      return;
    }
    const started = Date.now();
    let next = 0;
    const worker = async () => {
      while (next < message.tokens.length) {
        const i = next++;
        await open(message.url, message.tokens[i], i);
      }
    };
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      process.send?.({ ready: sockets.length, ms: Date.now() - started });
    } catch (error) {
      process.send?.({ error: String(error) });
    }
  },
);
