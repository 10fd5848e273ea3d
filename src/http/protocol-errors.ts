import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Errors } from '../errors.js';
import { errorBody } from './error-handler.js';
import { RAW_ANSWER_HEADERS } from './response-headers.js';

// Not `import … from 'node:http'`: an ES module import reads every export of node:http, and its
// lazy `WebSocket` export then loads Node's bundled undici: 16 MiB of resident memory, measured.
const { STATUS_CODES } = process.getBuiltinModule('node:http');

/** The status a parser error deserves, as Node's own default answers it; anything else is 400. */
const STATUS_BY_CODE: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

const GONE = new Set(['ECONNRESET', 'HPE_INVALID_EOF_STATE']);

/** Node's socket while it serves a response (private, but what Node's own default checks). */
interface HttpSocket extends Socket {
  _httpMessage?: { headersSent?: boolean } | null;
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser rejects (a malformed request line, a
 * bad HTTP version, headers over the size limit) never reaches a route, so it is answered here, in
 * the contract's error shape, and the connection closed. Logged at debug only: a client can send
 * these at will, and the raw bytes (its headers) are never logged.
 */
export function answerProtocolError(
  this: FastifyInstance,
  error: Error & { code?: string },
  socket: HttpSocket,
): void {
  // A connection reset, closed, or ended by the client mid-request has nobody left to answer.
  if (socket.destroyed || GONE.has(error.code ?? '')) {
    socket.destroy();
    return;
  }
  const status = STATUS_BY_CODE[error.code ?? ''] ?? 400;
  const reqId = randomUUID(); // as every answer's (app.ts genReqId): names this log line
  this.log.debug({ reqId, reason: error.code, status }, 'unparsable request refused');
  // Never write into a response already under way on this connection.
  if (socket.writable && socket._httpMessage?.headersSent !== true) {
    const body = JSON.stringify(errorBody(Errors.clientError(status)));
    const headers = Object.entries({ ...RAW_ANSWER_HEADERS, 'x-request-id': reqId }).map(
      ([name, value]) => `${name}: ${value}\r\n`,
    );
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        headers.join('') +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy();
}

/**
 * An `Expect` other than `100-continue`: Node answers `417` itself, with an empty body, unless the
 * server listens for it. Answered here in the contract's error shape.
 */
export function refuseUnknownExpectations(app: FastifyInstance): void {
  app.server.on('checkExpectation', (_request, response) => {
    const reqId = randomUUID();
    app.log.debug({ reqId, status: 417 }, 'unknown expectation refused'); // not its headers

    const body = JSON.stringify(errorBody(Errors.clientError(417)));
    response.writeHead(417, {
      ...RAW_ANSWER_HEADERS,
      'x-request-id': reqId,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    response.end(body);
  });
}

/**
 * HTTP/1.1 requires `Host`. Node's own check (`requireHostHeader`) answers an empty 400, so it is
 * turned off (app.ts) and done here, with the contract's body; HTTP/1.0 may omit the header.
 */
export function requireHostHeader(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers.host !== undefined || request.raw.httpVersion !== '1.1') return;
    reply.header('connection', 'close');
    throw Errors.badRequest();
  });
}
