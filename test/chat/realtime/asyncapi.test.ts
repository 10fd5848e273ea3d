import {
  DiagnosticSeverity,
  Parser,
  type AsyncAPIDocumentInterface,
  type Diagnostic,
} from '@asyncapi/parser';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withThrowawayApp } from '../../../scripts/throwaway-app.js';
import { chatSocketDocument } from '../../../src/chat/realtime/asyncapi.js';
import { Closures, TransportClosures } from '../../../src/chat/realtime/close-codes.js';
import { ClientFrames, ServerFrames } from '../../../src/chat/realtime/frame-schemas.js';
import { backends } from '../../helpers/backends.js';
import { twoMembers } from '../fixture.js';
import { RealtimeApp } from './fixture.js';
import type { Frame, SocketClient } from './socket-client.js';

type Json = Record<string, unknown>;
type Action = 'send' | 'receive';

/** The document as @asyncapi/parser reads it: what it found wrong, and the parsed model. */
async function parse(
  text: string,
): Promise<{ diagnostics: Diagnostic[]; document: AsyncAPIDocumentInterface }> {
  const { document, diagnostics } = await new Parser().parse(text);
  if (document === undefined) throw new Error(JSON.stringify(diagnostics, null, 2));
  return { diagnostics, document };
}

/** The frame types of the document's operations of one action (the service's point of view). */
function typesOf(document: AsyncAPIDocumentInterface, action: Action): string[] {
  return document
    .operations()
    .all()
    .filter((operation) => operation.action() === action)
    .flatMap((operation) => operation.messages().all())
    .map((message) => String(message.payload()?.properties()?.type?.const()))
    .sort();
}

interface Documented {
  readonly check: ValidateFunction;
  /** The same, refusing any field the document does not name, at any depth. */
  readonly closed: ValidateFunction;
}

/**
 * `schema` with every object that names its properties closed to others (the document's schemas
 * allow more, so clients stay lenient; the server must send no field it does not document).
 */
function closedSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closedSchema);
  if (typeof schema !== 'object' || schema === null) return schema;
  const copy = Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [key, closedSchema(value)]),
  );
  return 'properties' in copy && !('additionalProperties' in copy)
    ? { ...copy, additionalProperties: false }
    : copy;
}

/** A validator per documented frame, by action and type, compiled from the parsed payloads. */
function validators(document: AsyncAPIDocumentInterface): Map<string, Documented> {
  // Not strict: the parser's dereferenced payloads carry its own `x-parser-*` keywords.
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const found = new Map<string, Documented>();
  for (const operation of document.operations().all()) {
    for (const message of operation.messages().all()) {
      const payload = message.payload();
      const type = String(payload?.properties()?.type?.const());
      const check = ajv.compile(payload?.json() as Json);
      const closed = ajv.compile(closedSchema(payload?.json()) as Json);
      found.set(`${operation.action()} ${type}`, { check, closed });
    }
  }
  return found;
}

const sorted = (values: Iterable<string>) => [...values].sort();

describe('GET /asyncapi.json', () => {
  let served: { status: number; contentType: unknown; body: string; json: Json };
  let docsPage: Json;
  let parsed: Awaited<ReturnType<typeof parse>>;

  beforeAll(async () => {
    [served, docsPage] = await withThrowawayApp(async (app) => {
      const response = await app.inject({ method: 'GET', url: '/asyncapi.json' });
      const status = response.statusCode;
      const contentType = response.headers['content-type'];
      // What /docs renders: the OpenAPI document it loads.
      const docs = (await app.inject({ method: 'GET', url: '/docs/json' })).json();
      return [{ status, contentType, body: response.body, json: response.json() }, docs];
    });
    parsed = await parse(served.body);
  });

  it('is public JSON that @asyncapi/parser reads as AsyncAPI 3.0 with no error or warning', () => {
    expect(served.status).toBe(200);
    expect(served.contentType).toMatch(/^application\/json/);
    expect(served.json.asyncapi).toBe('3.0.0');
    const problems = parsed.diagnostics.filter(
      (d) => d.severity === DiagnosticSeverity.Error || d.severity === DiagnosticSeverity.Warning,
    );
    expect(problems.map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`)).toEqual([]);
  });

  it('has the title and version of the OpenAPI document, and one channel: the socket', () => {
    const openApiInfo = docsPage.info as Json;
    expect(parsed.document.info().title()).toBe(openApiInfo.title);
    expect(parsed.document.info().version()).toBe(openApiInfo.version);
    expect(
      parsed.document
        .channels()
        .all()
        .map((c) => c.address()),
    ).toEqual(['/api/chat/ws']);
  });

  it('has a message for every frame the socket accepts and every frame it writes', () => {
    expect(typesOf(parsed.document, 'receive')).toEqual(sorted(Object.keys(ClientFrames)));
    expect(typesOf(parsed.document, 'send')).toEqual(sorted(Object.keys(ServerFrames)));
    // API.md's lists, so a frame dropped from the schemas is noticed too.
    expect(typesOf(parsed.document, 'receive')).toEqual(['auth', 'ping', 'typing']);
    expect(typesOf(parsed.document, 'send')).toEqual(
      expect.arrayContaining([
        ...['ready', 'pong', 'resync_required', 'typing', 'conversation.read'],
        ...['message.created', 'message.updated', 'message.deleted'],
      ]),
    );
  });

  it('lists every close code the socket uses, with when, in x-close-codes and in its description', () => {
    const channel = (served.json.channels as Record<string, Json>).chat as Json;
    const listed = channel['x-close-codes'] as { code: number; when: string }[];
    const used = [...Object.values(Closures), ...TransportClosures].map((c) => c.code);
    expect(new Set(listed.map((c) => c.code))).toEqual(new Set(used));
    expect(listed.map((c) => c.code)).toEqual(
      expect.arrayContaining([4401, 4408, 4403, 4429, 4008, 1001, 1009, 1013]),
    );
    for (const { code, when } of listed) {
      expect(when.length, String(code)).toBeGreaterThan(10);
      expect(channel.description).toContain(`| ${code} |`);
    }
  });

  it('refers to the chat message schema of the OpenAPI document', () => {
    const openApiSchemas = (docsPage.components as Json).schemas as Record<string, Json>;
    const schema = parsed.document.components().schemas().get('ChatMessage')?.json() as Json;
    const own = (s: Json) => Object.keys(s.properties as Json).sort();
    expect(own(schema)).toEqual(own(openApiSchemas.ChatMessage as Json));
    expect(own(schema)).toEqual(expect.arrayContaining(['id', 'seq', 'text', 'version']));
  });

  it('is linked from /docs (the OpenAPI description and the Chat tag)', () => {
    const info = docsPage.info as Json;
    expect(info.description).toMatch(/\]\(http:\/\/[^)]+\/asyncapi\.json\)/);
    const chat = (docsPage.tags as Json[]).find((tag) => tag.name === 'Chat');
    expect((chat?.externalDocs as Json | undefined)?.url).toMatch(/\/asyncapi\.json$/);
  });
});

describe('the server of the AsyncAPI document', () => {
  const info = { title: 'T', version: '1' };
  const serverOf = (publicUrl: string) =>
    (chatSocketDocument(info, publicUrl).servers as Record<string, Json>).api;

  it("is the public URL's host, ws behind http and wss behind https, with its path", () => {
    expect(serverOf('http://127.0.0.1:3000')).toMatchObject({
      host: '127.0.0.1:3000',
      protocol: 'ws',
    });
    expect(serverOf('http://127.0.0.1:3000')).not.toHaveProperty('pathname');
    expect(serverOf('https://chat.example.com/accounts')).toMatchObject({
      host: 'chat.example.com',
      protocol: 'wss',
      pathname: '/accounts',
    });
  });
});

describe.each(backends)(
  'the chat socket speaks as its AsyncAPI document says ($name)',
  (backend) => {
    let rt: RealtimeApp;
    let validate: Map<string, Documented>;
    let documented: { send: string[]; receive: string[] };
    beforeAll(async () => {
      rt = await RealtimeApp.start(backend);
      const { document } = await parse((await rt.t.call('GET', '/asyncapi.json')).body);
      validate = validators(document);
      documented = { send: typesOf(document, 'send'), receive: typesOf(document, 'receive') };
    });
    afterAll(() => rt?.close());

    /**
     * Checks `frame` against the documented payload of its type, and that it has no field the
     * document does not name, at any depth (the schemas allow more, so clients stay lenient);
     * answers its type.
     */
    function conforms(action: Action, frame: Json): string {
      const type = String(frame.type);
      const documented = validate.get(`${action} ${type}`);
      if (documented === undefined) throw new Error(`${action} ${type} is not documented`);
      const { check, closed } = documented;
      expect(check(frame) ? [] : check.errors, `${action} ${type}`).toEqual([]);
      expect(closed(frame) ? [] : closed.errors, `${action} ${type}: undocumented`).toEqual([]);
      return type;
    }

    it('every documented frame goes through, each as documented', async () => {
      const { fan, influencer, id } = await twoMembers(rt.t);
      const sent: string[] = [];
      const send = (client: SocketClient, frame: Json) => {
        sent.push(conforms('receive', frame));
        client.send(frame);
      };
      // The browser's way (an `auth` frame), and the upgrade header.
      const fanSocket = await rt.open();
      send(fanSocket, { type: 'auth', access_token: fan.account.accessToken });
      await fanSocket.waitFor('ready');
      const influencerSocket = await rt.connect(influencer.account);

      send(fanSocket, { type: 'ping' });
      await fanSocket.waitFor('pong');
      send(fanSocket, { type: 'typing', conversation_id: id });
      await influencerSocket.waitFor('typing');
      const message = await fan.sent(id, 'hello');
      expect((await fan.edit(message.id, 'hello again')).statusCode).toBe(200);
      expect((await fan.delete(message.id)).statusCode).toBe(200);
      await influencer.read(id);
      await influencerSocket.waitFor('conversation.read');
      rt.bus.resync();
      await fanSocket.waitFor('resync_required');
      await influencerSocket.waitFor('message.deleted');

      const received = [...fanSocket.frames, ...influencerSocket.frames].map((frame: Frame) =>
        conforms('send', frame),
      );
      expect(sorted(new Set(received))).toEqual(documented.send);
      expect(sorted(new Set(sent))).toEqual(documented.receive);
    });
  },
);
