import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import type { RouteAccess } from './authenticate.js';
import { writeAsBuilt } from './serializer.js';

/** One registered route, as the route table lists it. */
export interface RouteEntry {
  readonly method: string;
  readonly url: string;
  /** What the route's config declares; undefined when it declares nothing. */
  readonly access: RouteAccess | undefined;
  /** The fields its body schema names, if it takes a body (for fuzz tests). */
  readonly bodyFields: readonly string[] | undefined;
  /** Its answers are written by `JSON.stringify` (serializer.ts `writeAsBuilt`). */
  readonly writtenAsBuilt: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered so far: for the 405 answer and for tests that walk the table. */
    routeTable(): readonly RouteEntry[];
  }
}

interface KnownPath {
  readonly pattern: RegExp;
  readonly methods: Set<string>;
}

/**
 * Remembers every route's path, methods and declared access, so an unknown method on a known path
 * answers 405 with `Allow` while an unknown path answers 404, and tests can walk the table.
 */
export function trackRoutes(app: FastifyInstance) {
  const paths = new Map<string, KnownPath>();
  const entries: RouteEntry[] = [];
  app.decorate('routeTable', () => entries);
  app.addHook('onRoute', (route) => {
    const url = route.url ?? route.path;
    const known = paths.get(url) ?? { pattern: toPattern(url), methods: new Set<string>() };
    for (const method of [route.method].flat()) {
      known.methods.add(method);
      const access = (route.config as { access?: RouteAccess } | undefined)?.access;
      const bodyFields = bodyFieldsOf(route.schema?.body);
      const writtenAsBuilt = route.serializerCompiler === writeAsBuilt;
      entries.push({ method, url, access, bodyFields, writtenAsBuilt });
    }
    paths.set(url, known);
  });

  return async function notFound(request: FastifyRequest, _reply: FastifyReply): Promise<never> {
    const path = request.url.split('?')[0] ?? '';
    const match = [...paths.values()].find((p) => p.pattern.test(path));
    if (match !== undefined && !match.methods.has(request.method)) {
      throw Errors.methodNotAllowed([...match.methods].sort());
    }
    throw Errors.notFound();
  };
}

function bodyFieldsOf(schema: unknown): readonly string[] | undefined {
  if (schema === undefined) return undefined;
  const properties = (schema as { properties?: Record<string, unknown> }).properties;
  return Object.keys(properties ?? {});
}

function toPattern(url: string): RegExp {
  const escaped = url
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  // Exactly: the router takes no trailing slash, so neither does the 405 (its Allow would name
  // methods that answer 404 there).
  return new RegExp(`^${escaped}$`);
}
