import SerializerSelector, { type SerializerFactory } from '@fastify/fast-json-stringify-compiler';
import type { FastifySerializerCompiler } from 'fastify';

type Schema = Record<string, unknown>;
type Schemas = Record<string, Schema>;

/**
 * Fastify's response serializer (fast-json-stringify), given the schemas with every nullable
 * reference written out. `nullable(Type.Ref(X))` is `anyOf: [{ $ref: X }, { type: 'null' }]`,
 * which the OpenAPI document must say; but fast-json-stringify serializes an `anyOf` by running
 * ajv on the value, branch by branch, to choose one: a conversation's `last_message` was checked
 * against `ChatMessage`, its uuid and date-time formats included, on every conversation of every
 * list page (3.8 % of a PostgreSQL list page's CPU, measured). Handed `X` itself with `type:
 * ['object', 'null']` instead, it serializes with a null check. Only the serializer sees the
 * rewritten schemas: validation and the OpenAPI document keep the reference.
 */
export function responseSerializer(): SerializerFactory {
  const build = SerializerSelector();
  return (externalSchemas, options) => {
    const shared = (externalSchemas ?? {}) as Schemas;
    const inline = (schema: unknown) => withNullableRefsInlined(schema, shared);
    const written = Object.fromEntries(Object.entries(shared).map(([id, s]) => [id, inline(s)]));
    const compile = build(written, options);
    return (route) => compile({ ...route, schema: inline(route.schema) });
  };
}

/**
 * A copy of `schema` with each nullable reference to a shared object schema written out. A schema
 * that refers to itself through one (a tree) keeps that reference as it is, inside its own
 * written-out copy: writing it out again would never end.
 */
export function withNullableRefsInlined(
  schema: unknown,
  shared: Schemas,
  within: ReadonlySet<string> = new Set(),
): unknown {
  if (Array.isArray(schema))
    return schema.map((item) => withNullableRefsInlined(item, shared, within));
  if (typeof schema !== 'object' || schema === null) return schema;
  const target = nullableRefTarget(schema as Schema, shared);
  if (target !== undefined && !within.has(target.id)) {
    // Without its $id: fast-json-stringify refuses a second schema of the same id.
    const inner = new Set(within).add(target.id);
    const written = withNullableRefsInlined(without(target.schema, '$id'), shared, inner) as Schema;
    return { ...written, ...without(schema as Schema, 'anyOf'), type: ['object', 'null'] };
  }
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      withNullableRefsInlined(value, shared, within),
    ]),
  );
}

/** The shared object schema `schema` is a nullable reference to, if it is one. */
function nullableRefTarget(
  schema: Schema,
  shared: Schemas,
): { id: string; schema: Schema } | undefined {
  const branches = schema.anyOf;
  if (!Array.isArray(branches) || branches.length !== 2) return undefined;
  const [ref, none] = branches as [Schema, Schema];
  if (typeof ref.$ref !== 'string' || Object.keys(ref).length !== 1) return undefined;
  if (none.type !== 'null' || Object.keys(none).length !== 1) return undefined;
  const target = shared[ref.$ref];
  return target?.type === 'object' ? { id: ref.$ref, schema: target } : undefined;
}

function without(schema: Schema, key: string): Schema {
  const copy = { ...schema };
  delete copy[key];
  return copy;
}

/**
 * The serializer of the long list pages (a directory page, a page of messages, the conversation
 * list: routes that opt in with `...WRITTEN_AS_BUILT`): `JSON.stringify`, not the schema's
 * fast-json-stringify. Their objects are built field by field by view functions that name every
 * field (influencerView, chatMessageView, conversationViews), so the schema's filter has nothing
 * to take out; test/http/written-as-built.test.ts holds every such route's answers to the same
 * JSON as the schema's serializer writes from them. Why: that serializer builds its text by
 * `+=`, hundreds of pieces for a page, which the socket write then flattens and encodes; for a
 * page of 20 profiles with non-Latin names that took 71 µs, against 34 µs for `JSON.stringify`
 * (bench/README.md, "Directory").
 */
export const writeAsBuilt: FastifySerializerCompiler<unknown> = () => (data) =>
  JSON.stringify(data);

/** Route options of a list page written by `JSON.stringify` (writeAsBuilt). */
export const WRITTEN_AS_BUILT = { serializerCompiler: writeAsBuilt } as const;
