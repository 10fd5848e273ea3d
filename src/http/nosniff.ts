import type { FastifyInstance } from 'fastify';

/**
 * Every answer carries `X-Content-Type-Options: nosniff`: its `Content-Type` is the only reading a
 * browser may make of it. Answers echo what users wrote (chat messages, bios, names), which a
 * browser sniffing content could otherwise take for HTML or script.
 */
export function noSniff(app: FastifyInstance): void {
  app.addHook('onSend', async (_request, reply) => {
    reply.header('x-content-type-options', 'nosniff');
  });
}
