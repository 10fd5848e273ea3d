import { Type, type TSchema } from '@sinclair/typebox';
import { ERROR_CODES } from '../errors.js';

/** The body of every 4xx/5xx answer. */
export const ErrorBody = Type.Object(
  {
    message: Type.String({ description: 'One human sentence.' }),
    error: Type.String({
      enum: [...ERROR_CODES], // generated from the catalogue (src/errors.ts)
      description: 'Stable snake_case code, e.g. `invalid_code`.',
    }),
    details: Type.Optional(
      Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), {
        description: 'Present on `validation_failed` and `weak_password` only.',
      }),
    ),
  },
  { $id: 'ErrorBody', title: 'Error' },
);

/** A value that may be null: a union with null (how OpenAPI 3.1 says it). */
export const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** `{ "message": "<text>" }` and nothing else. */
export function MessageBody(text: string) {
  return Type.Object({ message: Type.Literal(text) }, { additionalProperties: false });
}

/** Every route answers errors in the same shape; listed once per route for the OpenAPI document. */
export function withErrors<T extends Record<number, TSchema>>(responses: T) {
  return { ...responses, '4xx': Type.Ref(ErrorBody), '5xx': Type.Ref(ErrorBody) };
}
