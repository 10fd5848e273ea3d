import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../context.js';
import { callerOf } from '../http/authenticate.js';
import * as schemas from './schemas.js';
import { blockUser, listBlocks, unblockUser } from './service.js';

interface Options {
  readonly ctx: ServiceContext;
}

export const blockRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { ctx }) => {
  const config = { access: 'bearer' } as const;

  app.get('/api/blocks', { config, schema: schemas.listBlocksSchema }, async (request) => {
    const caller = callerOf(request);
    const binding = ['blocks', caller.userId] as const;
    const { blocks, next } = await listBlocks(
      ctx,
      caller,
      ctx.cursors.page(request.query, binding),
    );
    return { blocks, next_cursor: ctx.cursors.next(binding, next) };
  });

  app.put('/api/blocks/:user_id', { config, schema: schemas.blockUserSchema }, async (request) => {
    await blockUser(ctx, callerOf(request), request.params.user_id);
    return { blocked: true as const };
  });

  app.delete(
    '/api/blocks/:user_id',
    { config, schema: schemas.unblockUserSchema },
    async (request) => {
      await unblockUser(ctx, callerOf(request), request.params.user_id);
      return { blocked: false as const };
    },
  );
};
