import type { FastifyInstance } from 'fastify';
import { Errors } from '../errors.js';

/**
 * Request bodies are JSON objects (API.md, "Conventions"). An empty body under
 * `Content-Type: application/json` is no body: many HTTP clients send that header on every
 * request, also a `PUT …/follow` or a `POST /api/logout` without one, which Fastify answered
 * `400 invalid_json`. A body-less request to a route that takes a body is validated as `{}`, so
 * each missing field is named; a body that is not an object is refused on every route, also one
 * whose fields are all optional or that takes none.
 */
export function jsonObjectBodies(app: FastifyInstance): void {
  // "Unknown request fields are ignored" (API.md): __proto__ and constructor.prototype too.
  const parseJson = app.getDefaultJsonParser('remove', 'remove');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // No route, no body to read: an unknown path answers 404 and a wrong method 405, whatever came.
    if (request.is404) return done(null, undefined);
    if (!isUtf8Charset(request.headers['content-type'])) return done(Errors.unsupportedMediaType());
    if (body.length === 0) return done(null, undefined);
    // A gzipped body read as JSON was answered invalid_json: the body is fine, its coding is not.
    if (isEncoded(request.headers['content-encoding']))
      return done(Errors.unsupportedContentEncoding());
    let text: string;
    try {
      text = typeof body === 'string' ? body : strictUtf8.decode(body);
    } catch {
      // Not replaced by U+FFFD: two different passwords would read (and hash) alike.
      return done(Errors.invalidJson());
    }
    parseJson(request, text, done);
  });
  app.addHook('preValidation', async (request) => {
    if (request.is404) return;
    const { body } = request;
    const takesBody = request.routeOptions.schema?.body !== undefined;
    if (body === undefined && takesBody) request.body = {};
    else if (body !== undefined && !takesBody && !isObject(body))
      throw Errors.validationFailed([{ field: 'body', message: 'must be object' }]);
  });
}

/** JSON is UTF-8 (RFC 8259); a body that says it is anything else is refused, not misread. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function isUtf8Charset(contentType: string | undefined): boolean {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1];
  return charset === undefined || /^utf-?8$/i.test(charset);
}

const isEncoded = (contentEncoding: string | undefined): boolean =>
  contentEncoding !== undefined && !/^\s*(identity)?\s*$/i.test(contentEncoding);

const isObject = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
