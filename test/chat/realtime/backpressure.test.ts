import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backends } from '../../helpers/backends.js';
import { ChatClient, newKey, openConversation } from '../fixture.js';
import { RealtimeApp } from './fixture.js';
import type { SocketClient } from './socket-client.js';

const MANY = { limit: 10_000, windowMs: 60_000 };
const PEERS = 8;
/** 2,000 code points of 4 bytes: each event is about 8 KiB on the wire. */
const LONG_TEXT = '😀'.repeat(2_000);

// 1,440 sends, each waited for: about 50 s for one backend on a busy 2-core machine, over the 30 s
// default. A peer's delivery that waits for the reader still fails its 10 s poll.
vi.setConfig({ testTimeout: 120_000 });

interface Peer {
  readonly client: ChatClient;
  readonly conversationId: string;
  readonly socket: SocketClient;
  /** The client_message_ids of its messages that reached its own socket. */
  readonly arrivals: Set<string>;
}

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
     * other, all peers at once; each send waits for its event on the sender's own socket. So the
     * burst ends only if the others' deliveries never wait for the reader.
     */
    async function burst(peers: Peer[], count: number): Promise<void> {
      await Promise.all(
        peers.map(async (peer) => {
          for (let i = 0; i < count; i += 1) {
            const key = newKey();
            expect((await peer.client.send(peer.conversationId, LONG_TEXT, key)).statusCode).toBe(
              201,
            );
            await expect
              .poll(() => peer.arrivals.has(key), { interval: 1, timeout: 10_000 })
              .toBe(true);
          }
        }),
      );
    }

    // The others' latency while one reader stalls is measured where timing belongs: `npm run bench`.
    it('closes it with 4008 while the others get every event, never waiting for it', async () => {
      const readerAccount = await rt.t.register();
      const peers: Peer[] = [];
      for (let i = 0; i < PEERS; i += 1) {
        const client = new ChatClient(rt.t, await rt.t.register());
        const conversationId = await openConversation(rt.t, readerAccount, client.account);
        const socket = await rt.connect(client.account);
        const arrivals = new Set<string>();
        socket.ws.on('message', (data) => {
          const frame = JSON.parse(String(data)) as {
            chat_message?: { client_message_id?: string };
          };
          const key = frame.chat_message?.client_message_id;
          if (key !== undefined) arrivals.add(key);
        });
        peers.push({ client, conversationId, socket, arrivals });
      }
      const reader = await rt.connect(readerAccount);

      await burst(peers, 30);
      expect(reader.framesOf('message.created')).toHaveLength(PEERS * 30);

      reader.ws.pause(); // stops reading its TCP socket: the kernel's buffers fill, then ours
      // 8 × 150 events of 8 KiB: 9.6 MiB for the reader, twice what it takes to close it here (the
      // kernel's socket buffers took about 4 MiB for a reader that never reads, measured; then the
      // server's 1 MiB).
      await burst(peers, 150); // ends while the reader is still paused: nobody waited for it
      reader.ws.resume();
      // The server closed it as a slow reader (4008). When the burst outlasts the 2 s a closing
      // socket gets before it is cut, the close frame still queued behind the unread data goes
      // with the connection, and the client sees 1006; delivery.test.ts checks the code.
      expect([4008, 1006]).toContain((await reader.waitClosed()).code);
      await expect
        .poll(() => rt.metric('chat_sockets_closed_total', '{reason="slow_reader"}'))
        .toBe(1);
      expect(reader.framesOf('message.created').length).toBeLessThan(PEERS * 180);

      for (const peer of peers) {
        expect(peer.socket.framesOf('message.created')).toHaveLength(180);
        await peer.socket.roundTrip();
      }
    });
  },
);
