import { Errors } from '../errors.js';
import { Type } from '@sinclair/typebox';
import { NextCursor, pageQuery } from '../http/cursor.js';
import { nullable, withErrors } from '../http/schemas.js';

const tags = ['Chat'];
const ByUser = Type.Object({ user_id: Type.String({ description: 'The account to (un)block.' }) });

export const blockUserSchema = {
  tags,
  operationId: 'blockUser',
  summary: 'Block an account: neither side can message or follow the other',
  params: ByUser,
  response: withErrors(
    { 200: Type.Object({ blocked: Type.Literal(true) }) },
    Errors.cannotBlockSelf,
    Errors.notFound,
  ),
};

export const unblockUserSchema = {
  tags,
  operationId: 'unblockUser',
  summary: 'Lift a block (follows it removed are not restored)',
  params: ByUser,
  response: withErrors({ 200: Type.Object({ blocked: Type.Literal(false) }) }, Errors.notFound),
};

const BlockedUser = Type.Object({
  user: Type.Object({
    id: Type.String({ format: 'uuid' }),
    name: nullable(Type.String()),
    avatar_url: nullable(Type.String()),
    handle: nullable(Type.String()),
  }),
  blocked_at: Type.String({ format: 'date-time' }),
});

export const listBlocksSchema = {
  tags,
  operationId: 'listBlocks',
  summary: 'The accounts the caller blocks, newest block first',
  querystring: Type.Object(pageQuery()),
  response: withErrors(
    {
      200: Type.Object({ blocks: Type.Array(BlockedUser), next_cursor: NextCursor }),
    },
    Errors.invalidCursor,
  ),
};
