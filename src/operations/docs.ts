import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * The OpenAPI 3.1 document, generated from the route schemas that also validate requests,
 * at /openapi.json, and an interactive reference at /docs (assets served locally, no CDN).
 */
export const openApiDocument = fp(
  async (app: FastifyInstance, { publicUrl }: { publicUrl: string }) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Account service API',
          version: '1.0.0',
          description:
            'Auth and Profile groups. Errors are `{message, error, details?}`; see the README.',
        },
        servers: [{ url: publicUrl }],
        tags: [{ name: 'Auth' }, { name: 'Profile' }, { name: 'Operations' }],
        components: {
          securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
        },
      },
      refResolver: {
        buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`),
      },
    });
  },
);

export async function docsRoutes(app: FastifyInstance) {
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
