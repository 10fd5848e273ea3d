import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { chatSocketDocument, type ApiInfo } from '../chat/realtime/asyncapi.js';
import { Errors } from '../errors.js';
import { isApiPath, type RouteAccess } from '../http/authenticate.js';
import {
  codesNamedBy,
  ErrorBody,
  errorsNamed,
  TooManyRequests,
  Unauthorized,
} from '../http/schemas.js';

/** Both documents' title and version: the OpenAPI one and the chat socket's AsyncAPI one. */
const INFO: ApiInfo = { title: 'Account service API', version: '1.0.0' };

/** Every tag an operation may carry; Redocly's lint (npm run lint:openapi) wants each described. */
const tags = (publicUrl: string) => [
  { name: 'Auth', description: 'Accounts, tokens, sessions, e-mail confirmation and passwords.' },
  { name: 'Profile', description: "The signed-in account's own profile." },
  {
    name: 'Influencer',
    description: 'Public influencer profiles, the searchable directory, and follows.',
  },
  {
    name: 'Chat',
    description: 'One-to-one conversations, their messages and unread counts, and blocks.',
    externalDocs: {
      description: 'The chat WebSocket (GET /api/chat/ws): its AsyncAPI 3.0 document',
      url: `${publicUrl}/asyncapi.json`,
    },
  },
  {
    name: 'Operations',
    description: 'Probes and the public keys that verify access tokens (no token needed).',
  },
];

/**
 * The OpenAPI 3.1 document, generated from the route schemas that also validate requests,
 * at /openapi.json, and an interactive reference at /docs (assets served locally, no CDN). The
 * chat socket is not an HTTP operation: its AsyncAPI document (/asyncapi.json) is linked instead.
 */
export const openApiDocument = fp(
  async (app: FastifyInstance, { publicUrl }: { publicUrl: string }) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          ...INFO,
          description: `Auth, Profile, Influencer and Chat groups. Errors are \`{message, error, details?}\`; see the README. The chat WebSocket (\`GET /api/chat/ws\`) is described by an AsyncAPI 3.0 document: [/asyncapi.json](${publicUrl}/asyncapi.json).`,
          // No open-source licence: the service is not published (SPDX's form for a licence of one's own).
          license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        },
        servers: [{ url: publicUrl }],
        tags: tags(publicUrl),
        components: {
          securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
        },
      },
      transform: ({ schema, url, route }) => ({ schema: documented(schema, url, route), url }),
      transformObject: (document) =>
        withOptionalBodies('openapiObject' in document ? document.openapiObject : {}),
      refResolver: {
        buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`),
      },
    });
  },
);

/**
 * What the document says of a route beyond its own schema, from the facts that rule it, so the two
 * cannot drift: its security is the access the authentication hook enforces (`config.access`),
 * every route may answer a 5xx (500, or 503 while the database is away or the service drains) and
 * every /api route a 4xx, in the one error shape; a route that looks at a token may answer 401 with
 * `WWW-Authenticate`, and every /api route 429 with `Retry-After` (the anonymous budget counts
 * every request without a valid token, and some routes have limits of their own).
 */
function documented(
  schema: FastifySchema | undefined,
  url: string,
  route: RouteOptions,
): FastifySchema {
  if (schema === undefined) return {};
  const api = isApiPath(url);
  const access = (route.config as { access?: RouteAccess } | undefined)?.access;
  const response = { ...(schema.response as Record<string, unknown> | undefined) };
  response['5xx'] ??= Type.Ref(ErrorBody);
  if (api) response['4xx'] ??= Type.Ref(ErrorBody);
  if (api && access !== 'public') response['401'] ??= Unauthorized;
  // Every request without a valid token counts against the per-IP anonymous budget, a bad or
  // expired one on a bearer route too (http/authenticate.ts): any /api route may answer 429.
  if (api) response['429'] ??= TooManyRequests;
  if (api) withInputErrors(readsBody(schema, route), schema.querystring !== undefined, response);
  return { ...schema, security: securityOf(api, access), response };
}

/** The methods whose requests may carry a body, which every /api route reads (http/json-bodies.ts). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Whether a route reads a body: one with a body schema, and every route of a method that may carry
 * one, which refuses a body that is no JSON object (`PUT …/follow` with `[]`) as any other does.
 */
const readsBody = (schema: FastifySchema, route: RouteOptions): boolean =>
  schema.body !== undefined || [route.method].flat().some((method) => BODY_METHODS.has(method));

/**
 * The errors of a request's own shape, on every /api route that reads one (API.md, "Conventions"),
 * beside the codes the route names: its 400 lists `validation_failed` (and `invalid_json` for a
 * body), and a body may also answer 413 and 415.
 */
function withInputErrors(body: boolean, query: boolean, response: Record<string, unknown>): void {
  if (!body && !query) return;
  const codes = [...codesNamedBy(response['400'])];
  for (const { code } of [...(body ? [Errors.invalidJson] : []), Errors.validationFailed])
    if (!codes.includes(code)) codes.push(code);
  response['400'] = errorsNamed(codes);
  if (!body) return;
  response['413'] ??= errorsNamed([Errors.payloadTooLarge.code]);
  response['415'] ??= errorsNamed([Errors.unsupportedMediaType.code]);
}

interface DocumentedBody {
  required?: boolean;
  content?: Record<string, { schema?: { required?: readonly string[] } }>;
}

/**
 * @fastify/swagger marks every request body required; but a body-less request is validated as `{}`
 * (app.ts), so a body whose every field is optional (`POST /api/logout`, `PATCH /api/profile`) may
 * be left out, and the document says so.
 */
function withOptionalBodies<T extends object>(document: T): T {
  const paths = (document as { paths?: Record<string, Record<string, unknown>> }).paths ?? {};
  for (const operation of Object.values(paths).flatMap((operations) => Object.values(operations))) {
    const body = (operation as { requestBody?: DocumentedBody }).requestBody;
    const fields = body?.content?.['application/json']?.schema?.required ?? [];
    if (body !== undefined) body.required = fields.length > 0;
  }
  return document;
}

function securityOf(api: boolean, access: RouteAccess | undefined): Record<string, string[]>[] {
  if (!api || access === 'public') return [];
  // The socket takes its token on the upgrade or in its first frame.
  if (access === 'optional' || access === 'socket') return [{}, { bearerAuth: [] }];
  return [{ bearerAuth: [] }]; // what the hook enforces when a route declares nothing
}

export async function docsRoutes(app: FastifyInstance, { publicUrl }: { publicUrl: string }) {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list' },
    // The page's own scripts and styles only, no framing by other sites (the plugin's policy),
    // without `upgrade-insecure-requests`: on http://localhost it sent every asset to https.
    staticCSP: true,
    transformStaticCSP: (policy) => policy.replace(/\s*upgrade-insecure-requests;?/, ''),
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  const asyncApi = chatSocketDocument(INFO, publicUrl);
  app.get('/asyncapi.json', { schema: { hide: true } }, async () => asyncApi);
}
