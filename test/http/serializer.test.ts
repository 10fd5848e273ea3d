import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
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

  it('does not change the schemas it is given (the OpenAPI document keeps the reference)', () => {
    const before = JSON.stringify(Card);
    withNullableRefsInlined(Card, shared);
    expect(JSON.stringify(Card)).toBe(before);
  });
});
