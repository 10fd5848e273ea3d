import { Type, type TSchema } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { oneOf } from '../../src/influencer/fields.js';
import { nullable } from '../../src/http/schemas.js';

/** `nullable` (src/http/schemas.ts): the schema it writes, and what a validator makes of it. */
const ajv = new Ajv({ allErrors: true });
addFormats.default(ajv);
const accepts = (schema: TSchema, value: unknown) =>
  ajv.validate(JSON.parse(JSON.stringify(schema)), value);

describe('nullable', () => {
  it('writes a type list for a typed schema, so the serializer needs no validator to pick a branch', () => {
    const schema = nullable(Type.String({ format: 'date-time', maxLength: 40 }));
    expect(JSON.parse(JSON.stringify(schema))).toEqual({
      type: ['string', 'null'],
      format: 'date-time',
      maxLength: 40,
    });
    expect(accepts(schema, null)).toBe(true);
    expect(accepts(schema, '2026-11-25T05:45:00.000Z')).toBe(true);
    expect(accepts(schema, 'yesterday')).toBe(false);
    expect(accepts(schema, 5)).toBe(false);
  });

  it('keeps a union with null where a null would fail the schema’s own keywords (enum, const)', () => {
    for (const schema of [
      nullable(oneOf(['everyone', 'followers'], 'who')),
      nullable(Type.Literal('sent')),
    ]) {
      expect(JSON.parse(JSON.stringify(schema))).toHaveProperty('anyOf');
      expect(accepts(schema, null)).toBe(true);
      expect(accepts(schema, 'nobody')).toBe(false);
    }
    expect(accepts(nullable(oneOf(['everyone', 'followers'], 'who')), 'everyone')).toBe(true);
    expect(accepts(nullable(Type.Literal('sent')), 'sent')).toBe(true);
  });

  it('keeps a union with null for a reference', () => {
    const schema = nullable(Type.Ref('Thing'));
    expect(JSON.parse(JSON.stringify(schema))).toEqual({
      anyOf: [{ $ref: 'Thing' }, { type: 'null' }],
    });
  });
});
