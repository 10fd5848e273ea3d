import type { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { ChatSocket } from '../../../src/chat/realtime/chat-socket.js';
import { FakeWs } from './fake-ws.js';

// API.md: "4008: the client reads too slowly (over 1 MiB waiting to be sent)". The backpressure
// test shows a stalled reader closed under a burst; this pins where the line is.
describe('a chat socket whose client reads slowly', () => {
  it('is written to with up to 1 MiB waiting, and closed with 4008 past it', () => {
    const ws = new FakeWs();
    const socket = new ChatSocket(ws as unknown as WebSocket, Date.now() + 5_000);
    ws.bufferedAmount = 1024 * 1024;
    expect(socket.send('{"type":"pong"}')).toBe(true);
    expect(ws.closedWith).toBeUndefined();
    ws.bufferedAmount = 1024 * 1024 + 1;
    expect(socket.send('{"type":"pong"}')).toBe(false);
    expect(ws.closedWith).toBe(4008);
    expect(ws.sent).toHaveLength(1);
  });
});
