import type { FastifyInstance } from 'fastify';
import { Errors } from '../errors.js';

/**
 * Once the app is closing: requests still arriving on open keep-alive connections get our
 * `503 unavailable` body, and every response asks the client to reconnect (elsewhere), so idle
 * connections do not hold the shutdown open until their keep-alive timeout.
 */
export function drainOnClose(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async () => {
    if (closing) throw Errors.unavailable();
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
}
