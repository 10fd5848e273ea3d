import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AccessTokens } from '../security/access-tokens.js';

/** A public JWK; members beyond these (other key types) are published as they are. */
const PublicJwk = Type.Object(
  {
    kty: Type.String({ description: '`EC` (ES256 keys); `OKP` for EdDSA keys until they retire.' }),
    kid: Type.String(),
    alg: Type.String({ description: '`ES256`; `EdDSA` for keys of earlier versions.' }),
    use: Type.Literal('sig'),
    crv: Type.String(),
    x: Type.String(),
    y: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

export async function jwksRoutes(app: FastifyInstance, { tokens }: { tokens: AccessTokens }) {
  app.get(
    '/.well-known/jwks.json',
    {
      schema: {
        tags: ['Operations'],
        operationId: 'getSigningKeys',
        summary: 'Public keys that verify access tokens (JWKS)',
        response: { 200: Type.Object({ keys: Type.Array(PublicJwk) }) },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return tokens.publicJwks();
    },
  );
}
