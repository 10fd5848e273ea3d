import type { TSchema } from '@sinclair/typebox';
import { ChatMessage } from '../objects.js';
import { Closures, TransportClosures } from './close-codes.js';
import { ClientFrames, ServerFrames } from './frame-schemas.js';
import {
  AUTH_WINDOW_MS,
  HEARTBEAT_INTERVAL_MS,
  MAX_FRAME_BYTES,
  MAX_SOCKETS_PER_USER,
} from './socket-limits.js';

/**
 * The AsyncAPI 3.0 document of the chat socket, served at /asyncapi.json: built from the frame
 * schemas the socket parses and the publishers are typed by, the chat message schema of the
 * OpenAPI document, and the close codes the socket uses, so none of it is written twice.
 */

/** The `info` the OpenAPI document has too. */
export interface ApiInfo {
  readonly title: string;
  readonly version: string;
}

export type AsyncApiDocument = Readonly<Record<string, unknown>>;

const ADDRESS = '/api/chat/ws';
const CHANNEL = { $ref: '#/channels/chat' };
/** Schemas the frames refer to by `$id` (TypeBox's `Type.Ref`), as components. */
const COMPONENT_SCHEMAS = [ChatMessage];

/** Client frames whose answer is a frame of the server's. */
const REPLIES: Record<string, string> = { auth: 'ready', ping: 'pong' };

const DESCRIPTION = `The chat socket: JSON text frames, one object per frame, told apart by \`type\`. This document describes the service: its \`receive\` operations are the frames a client sends, its \`send\` operations the frames it writes to a client.

Authenticate with \`Authorization: Bearer <access token>\` on the upgrade or, from a browser (which cannot set that header), with an \`auth\` frame first, within ${AUTH_WINDOW_MS / 1000} s; never with a token in the URL. The server answers \`ready\`; until then only \`auth\` and \`ping\` are read (a \`pong\` says only that the socket is open) and no event is sent. Renew before the token's \`exp\` with another \`auth\` frame. Refusals are close codes (the upgrade itself always succeeds): see the channel.

HTTP is the source of truth. Keep a \`version\` per conversation: drop an event whose \`version\` is not above yours, apply one exactly one above, and page \`GET /api/chat/conversations/{id}/changes?since_version=<yours>\` on a gap. After every \`ready\` and \`resync_required\`, refetch the conversation list and \`GET /api/chat/unread\`.`;

export function chatSocketDocument(info: ApiInfo, publicUrl: string): AsyncApiDocument {
  return {
    asyncapi: '3.0.0',
    info: {
      title: info.title,
      version: info.version,
      description: DESCRIPTION,
      externalDocs: { description: 'The HTTP API (OpenAPI 3.1)', url: `${publicUrl}/docs` },
    },
    defaultContentType: 'application/json',
    servers: { api: server(publicUrl) },
    channels: { chat: channel() },
    operations: operations(),
    components: {
      messages: Object.fromEntries(frames().map((f) => [f.key, message(f.type, f.schema)])),
      schemas: Object.fromEntries(COMPONENT_SCHEMAS.map((s) => [String(s.$id), asyncApiSchema(s)])),
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'An access token on the upgrade request; or, instead, in the first frame (`auth`).',
        },
      },
    },
  };
}

interface Frame {
  readonly key: string;
  readonly type: string;
  readonly schema: TSchema;
  readonly from: 'client' | 'server';
}

/** Every frame, keyed by direction and type (`typing` goes both ways, in two shapes). */
function frames(): Frame[] {
  const of = (from: Frame['from'], schemas: Record<string, TSchema>) =>
    Object.entries(schemas).map(([type, schema]) => ({
      key: `${from}.${type}`,
      type,
      schema,
      from,
    }));
  return [...of('client', ClientFrames), ...of('server', ServerFrames)];
}

function server(publicUrl: string) {
  const url = new URL(publicUrl);
  return {
    host: url.host,
    protocol: url.protocol === 'https:' ? 'wss' : 'ws',
    ...(url.pathname !== '/' && { pathname: url.pathname }),
    description: "The API's own port (the service's PUBLIC_URL).",
    security: [{ $ref: '#/components/securitySchemes/bearerAuth' }],
  };
}

function channel() {
  return {
    address: ADDRESS,
    title: 'Chat socket',
    description: `One socket per client session, up to ${MAX_SOCKETS_PER_USER} per user. The server pings every ${HEARTBEAT_INTERVAL_MS / 1000} s (WebSocket ping frames, which browsers answer by themselves); a client that leaves two unanswered is cut. A frame over ${MAX_FRAME_BYTES / 1024} KiB closes the socket; an unknown, malformed or binary frame is ignored.\n\n${closeCodeTable()}`,
    servers: [{ $ref: '#/servers/api' }],
    messages: Object.fromEntries(
      frames().map((f) => [f.key, { $ref: `#/components/messages/${f.key}` }]),
    ),
    bindings: {
      ws: {
        method: 'GET',
        headers: {
          type: 'object',
          properties: {
            Authorization: {
              type: 'string',
              pattern: '^Bearer ',
              description: 'The access token; leave it out to send an `auth` frame instead.',
            },
          },
        },
        bindingVersion: '0.1.0',
      },
    },
    'x-close-codes': closeCodes(),
  };
}

/** The codes a client may read on close, each with the close frame's reason (if any) and when. */
function closeCodes(): { code: number; reason?: string; when: string }[] {
  const ours = Object.values(Closures).map(({ code, text, when }) => ({
    code,
    reason: text,
    when,
  }));
  return [...ours, ...TransportClosures.map(({ code, when }) => ({ code, when }))];
}

function closeCodeTable(): string {
  const rows = closeCodes().map(
    ({ code, reason, when }) =>
      `| ${code} | ${reason === undefined ? '' : `\`${reason}\``} | ${when} |`,
  );
  return [
    'Close codes (also as `x-close-codes`):',
    '',
    '| code | reason | when |',
    '|---|---|---|',
    ...rows,
  ].join('\n');
}

function operations() {
  return Object.fromEntries(
    frames().map((f) => {
      const reply = f.from === 'client' ? REPLIES[f.type] : undefined;
      const operation = {
        action: f.from === 'client' ? 'receive' : 'send',
        channel: CHANNEL,
        summary:
          f.from === 'client' ? `A client sends \`${f.type}\`.` : `The server sends \`${f.type}\`.`,
        messages: [{ $ref: `#/channels/chat/messages/${f.key}` }],
        ...(reply !== undefined && {
          reply: {
            channel: CHANNEL,
            messages: [{ $ref: `#/channels/chat/messages/server.${reply}` }],
          },
        }),
      };
      return [operationId(f), operation];
    }),
  );
}

/** `receiveAuth`, `sendMessageCreated`, `sendResyncRequired`. */
function operationId({ from, type }: Frame): string {
  const words = type.split(/[._]/).map((w) => w.charAt(0).toUpperCase() + w.slice(1));
  return (from === 'client' ? 'receive' : 'send') + words.join('');
}

function message(type: string, schema: TSchema) {
  return {
    name: type,
    title: type,
    description: schema.description,
    contentType: 'application/json',
    payload: asyncApiSchema(schema),
  };
}

/**
 * A TypeBox schema as plain JSON Schema (draft 7, AsyncAPI's default), its references by `$id`
 * turned into references to the document's components.
 */
function asyncApiSchema(schema: TSchema): unknown {
  return JSON.parse(JSON.stringify(schema), (key, value: unknown) => {
    if (key === '$id') return undefined;
    if (key === '$ref' && typeof value === 'string') return `#/components/schemas/${value}`;
    return value;
  });
}
