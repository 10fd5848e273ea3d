import { EventEmitter } from 'node:events';

/**
 * What ChatSocket and the gateway ask of ws's socket: its state, what waits to be sent, send,
 * ping, close and terminate; it records what was sent and the close code.
 */
export class FakeWs extends EventEmitter {
  readyState = 1; // OPEN
  bufferedAmount = 0;
  sent: string[] = [];
  closedWith: number | undefined;
  send(frame: string): void {
    this.sent.push(frame);
  }
  ping(): void {}
  close(code: number): void {
    this.readyState = 2; // CLOSING
    this.closedWith = code;
  }
  terminate(): void {
    this.readyState = 3; // CLOSED
    this.emit('close');
  }
}
