import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { Conversation } from '../../src/chat/objects.js';
import { loadConfig } from '../../src/config.js';
import { nullable } from '../../src/http/schemas.js';
import { responseSerializer, withNullableRefsInlined } from '../../src/http/serializer.js';

const Note = Type.Object(
  { id: Type.String({ format: 'uuid' }), text: Type.String() },
  { $id: 'Note', title: 'Note' },
);
const Card = Type.Object(
  { name: Type.String(), note: nullable(Type.Ref(Note)) },
  { $id: 'Card', title: 'Card' },
);
const shared = { Note, Card };
const route = { method: 'GET', url: '/card', httpStatus: '200', schema: Type.Ref(Card) };
// Not a uuid: ajv's format check refuses it, a plain serializer does not look.
const card = { name: 'Ada', note: { id: 'not-a-uuid', text: 'hi' } };

describe('responseSerializer', () => {
  it('serializes a nullable reference by a null check, not by validating the value', () => {
    const serialize = responseSerializer()(shared, {})(route);
    expect(JSON.parse(serialize(card))).toEqual(card);
    expect(JSON.parse(serialize({ name: 'Ada', note: null }))).toEqual({ name: 'Ada', note: null });
    // Fastify's default picks the anyOf's branch with ajv, which the format fails.
    const byDefault = SerializerSelector()(shared, {})(route);
    expect(() => byDefault(card)).toThrow(/does not match schema definition/);
  });

  it('is the serializer the service answers with', async () => {
    // A conversation whose last message no validator would pass: only a null check lets it out.
    const dir = mkdtempSync(join(tmpdir(), 'serializer-'));
    const app = await buildApp(loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'test.db')}` }));
    try {
      const conversation = {
        id: '7d3f1c2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f',
        influencer_id: null,
        peer: { id: null, name: null, avatar_url: null, handle: null },
        accepted: true,
        last_seq: 1,
        version: 1,
        last_message: {
          ...card.note,
          conversation_id: 'not-a-uuid',
          seq: 1,
          sender_id: null,
          created_at: 'not a date',
          edited_at: null,
          deleted: false,
          version: 1,
        },
        unread_count: 0,
        last_read_seq: 1,
        can_send: false,
        blocked_by_me: false,
        created_at: 'not a date',
        last_message_at: null,
      };
      app.get(
        '/serializer-probe',
        { config: { access: 'public' }, schema: { response: { 200: Type.Ref(Conversation) } } },
        async () => conversation,
      );
      await app.ready();
      const response = await app.inject({ method: 'GET', url: '/serializer-probe' });
      expect(response.statusCode).toBe(200);
      expect(response.json().last_message).toMatchObject({ id: 'not-a-uuid', text: 'hi' });
    } finally {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('drops what the schema does not list, as before', () => {
    const serialize = responseSerializer()(shared, {})(route);
    const extra = { ...card, secret: 'x', note: { ...card.note, hash: 'y' } };
    expect(JSON.parse(serialize(extra))).toEqual(card);
  });
});

describe('withNullableRefsInlined', () => {
  it('writes out a nullable reference to a shared object schema, without its $id', () => {
    const written = withNullableRefsInlined(Card, shared) as Record<string, unknown>;
    const note = (written.properties as Record<string, Record<string, unknown>>).note;
    expect(note).toMatchObject({ type: ['object', 'null'], title: 'Note' });
    expect(note).not.toHaveProperty('$id');
    expect(note).not.toHaveProperty('anyOf');
    expect(Object.keys(note?.properties as object)).toEqual(['id', 'text']);
  });

  it('leaves every other anyOf as it is', () => {
    const others = [
      { anyOf: [{ $ref: 'Note' }, { type: 'string' }] },
      { anyOf: [{ $ref: 'Unknown' }, { type: 'null' }] },
      { anyOf: [{ $ref: 'Note' }, { type: 'null' }, { type: 'string' }] },
      { anyOf: [{ type: 'string' }, { type: 'null' }] },
    ];
    for (const schema of others) expect(withNullableRefsInlined(schema, shared)).toEqual(schema);
  });

  it('leaves a reference to the schema it is writing out as it is (a tree ends)', () => {
    const Tree = Type.Object(
      { name: Type.String(), parent: nullable(Type.Ref('Tree')) },
      { $id: 'Tree' },
    );
    const trees = { Tree };
    const holder = { anyOf: [{ $ref: 'Tree' }, { type: 'null' }] };
    const written = withNullableRefsInlined(holder, trees) as Record<string, unknown>;
    expect(written.type).toEqual(['object', 'null']);
    const parent = (written.properties as Record<string, unknown>).parent;
    expect(JSON.parse(JSON.stringify(parent))).toEqual(holder);
    const serialize = responseSerializer()(trees, {})({ ...route, schema: holder });
    const tree = { name: 'a', parent: { name: 'b', parent: null } };
    expect(JSON.parse(serialize(tree))).toEqual(tree);
  });

  it('does not change the schemas it is given (the OpenAPI document keeps the reference)', () => {
    const before = JSON.stringify(Card);
    withNullableRefsInlined(Card, shared);
    expect(JSON.stringify(Card)).toBe(before);
  });
});
