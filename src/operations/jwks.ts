import type { FastifyInstance } from 'fastify';
import type { AccessTokens } from '../security/access-tokens.js';

export async function jwksRoutes(app: FastifyInstance, { tokens }: { tokens: AccessTokens }) {
  app.get(
    '/.well-known/jwks.json',
    { schema: { tags: ['Operations'], summary: 'Public keys that verify access tokens' } },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return tokens.publicJwks();
    },
  );
}
