import type { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { ChatSocket } from '../../../src/chat/realtime/chat-socket.js';
import { FakeWs } from './fake-ws.js';

/** A ready socket whose token expires at `exp`, renewing with a check that started at `since`. */
function renewing(exp: number, since: number) {
  const ws = new FakeWs();
  const socket = new ChatSocket(ws as unknown as WebSocket, 0);
  socket.authenticate('user', 'session', exp);
  socket.ready = true;
  socket.beginCheck(since);
  return { ws, socket };
}

/**
 * API.md: "the client sends a new `auth` frame with a fresh token before `exp`, or the socket
 * closes with `4401`". A renewal sent in time waits for its check; one whose check began after
 * `exp` (a client keeping frames queued while the database is away chains checks) does not.
 */
describe('a ready socket past its token expiry', () => {
  it('stays open while a renewal sent before exp is checked', () => {
    const { ws, socket } = renewing(1_000, 900);
    socket.closeIfOverdue(5_000);
    expect(ws.closedWith).toBeUndefined();
  });

  it('closes with 4401 while a check that began after exp runs', () => {
    const { ws, socket } = renewing(1_000, 1_200);
    socket.closeIfOverdue(5_000);
    expect(ws.closedWith).toBe(4401);
  });
});
