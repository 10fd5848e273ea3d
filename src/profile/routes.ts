import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../context.js';
import { callerOf } from '../http/authenticate.js';
import * as schemas from './schemas.js';
import { deleteAccount, getProfile, updateProfile } from './service.js';

interface Options {
  readonly ctx: ServiceContext;
}

export const profileRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { ctx }) => {
  const config = { access: 'bearer' } as const;

  app.get('/api/profile', { config, schema: schemas.getProfileSchema }, async (request) => {
    return { user: getProfile(callerOf(request)) };
  });

  app.patch('/api/profile', { config, schema: schemas.updateProfileSchema }, async (request) => {
    return {
      message: 'Profile updated' as const,
      user: await updateProfile(ctx, callerOf(request), request.body),
    };
  });

  app.delete('/api/profile', { config, schema: schemas.deleteProfileSchema }, async (request) => {
    await deleteAccount(ctx, callerOf(request), request.body.password);
    return { message: 'Account deleted' as const };
  });
};
