import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** A logger whose lines (JSON text, one per entry) are kept in `lines`, for a test to read. */
export function capturedLog(level = 'info'): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = pino(
    { level },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  return { log, lines };
}
