import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';

interface KnownPath {
  readonly pattern: RegExp;
  readonly methods: Set<string>;
}

/**
 * Remembers every route's path and methods, so an unknown method on a known path answers
 * 405 with `Allow` while an unknown path answers 404.
 */
export function trackRoutes(app: FastifyInstance) {
  const paths = new Map<string, KnownPath>();
  app.addHook('onRoute', (route) => {
    const url = route.url ?? route.path;
    const known = paths.get(url) ?? { pattern: toPattern(url), methods: new Set<string>() };
    for (const method of [route.method].flat()) known.methods.add(method);
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

function toPattern(url: string): RegExp {
  const escaped = url
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${escaped}/?$`);
}
