import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../../helpers/backends.js';
import { ChatClient, newKey, openConversation } from '../fixture.js';
import { RealtimeApp } from './fixture.js';
import type { SocketClient } from './socket-client.js';

const MANY = { limit: 10_000, windowMs: 60_000 };
const PEERS = 8;
/** 2,000 code points of 4 bytes: each event is about 8 KiB on the wire. */
const LONG_TEXT = '😀'.repeat(2_000);

interface Peer {
  readonly client: ChatClient;
  readonly conversationId: string;
  readonly socket: SocketClient;
  /** When each of its messages (by client_message_id) reached its own socket. */
  readonly arrivals: Map<string, number>;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

describe.each(backends)(
  'chat socket: one stalled reader among many, under a burst ($name)',
  (backend) => {
    let rt: RealtimeApp;
    beforeAll(async () => {
      rt = await RealtimeApp.start(backend, {
        overrides: { chatLimits: { chatSendsPerConversation: MANY, chatSendsPerUser: MANY } },
      });
    });
    afterAll(() => rt?.close());

    /**
     * Every peer sends `count` long messages in its conversation with the reader, one after the
     * other, all peers at once. Answers each send's latency: from the request to its event on the
     * sender's own socket.
     */
    async function burst(peers: Peer[], count: number): Promise<number[]> {
      const latencies: number[] = [];
      await Promise.all(
        peers.map(async (peer) => {
          for (let i = 0; i < count; i += 1) {
            const key = newKey();
            const started = performance.now();
            expect((await peer.client.send(peer.conversationId, LONG_TEXT, key)).statusCode).toBe(
              201,
            );
            await expect.poll(() => peer.arrivals.has(key), { interval: 1 }).toBe(true);
            latencies.push((peer.arrivals.get(key) as number) - started);
          }
        }),
      );
      return latencies;
    }

    it('closes it with 4008 while the others get every event and keep their latency', async () => {
      const readerAccount = await rt.t.register();
      const peers: Peer[] = [];
      for (let i = 0; i < PEERS; i += 1) {
        const client = new ChatClient(rt.t, await rt.t.register());
        const conversationId = await openConversation(rt.t, readerAccount, client.account);
        const socket = await rt.connect(client.account);
        const arrivals = new Map<string, number>();
        socket.ws.on('message', (data) => {
          const frame = JSON.parse(String(data)) as {
            chat_message?: { client_message_id?: string };
          };
          const key = frame.chat_message?.client_message_id;
          if (key !== undefined) arrivals.set(key, performance.now());
        });
        peers.push({ client, conversationId, socket, arrivals });
      }
      const reader = await rt.connect(readerAccount);

      const whileReading = await burst(peers, 30);
      expect(reader.framesOf('message.created')).toHaveLength(PEERS * 30);

      reader.ws.pause(); // stops reading its TCP socket: the kernel's buffers fill, then ours
      // 8 × 150 events of 8 KiB: 9.6 MiB for the reader, twice what it takes to close it here (the
      // kernel's socket buffers took about 4 MiB for a reader that never reads, measured; then the
      // server's 1 MiB).
      const whileStalled = await burst(peers, 150);
      reader.ws.resume();
      expect((await reader.waitClosed()).code).toBe(4008);
      expect(reader.framesOf('message.created').length).toBeLessThan(PEERS * 180);

      for (const peer of peers) {
        expect(peer.socket.framesOf('message.created')).toHaveLength(180);
        await peer.socket.roundTrip();
      }
      // The median send-to-socket latency of the others did not suffer from the stalled reader
      // (loose bounds: the two bursts share a loaded machine with everything else).
      const [before, during] = [median(whileReading), median(whileStalled)];
      expect(
        during,
        `median ${during.toFixed(1)} ms stalled vs ${before.toFixed(1)} ms`,
      ).toBeLessThan(2 * before + 5);
    });
  },
);
