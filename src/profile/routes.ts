import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Authenticator } from '../auth/authenticate.js';
import { callerOf } from '../auth/authenticate.js';
import type { ServiceContext } from '../context.js';
import * as schemas from './schemas.js';
import { deleteAccount, getProfile, updateProfile } from './service.js';

interface Options {
  readonly ctx: ServiceContext;
  readonly auth: Authenticator;
}

export const profileRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { ctx, auth }) => {
  app.addHook('onRequest', auth.requireBearer);

  app.get('/api/profile', { schema: schemas.getProfileSchema }, async (request) => {
    return { user: getProfile(callerOf(request)) };
  });

  app.patch('/api/profile', { schema: schemas.updateProfileSchema }, async (request) => {
    return {
      message: 'Profile updated' as const,
      user: await updateProfile(ctx, callerOf(request), request.body),
    };
  });

  app.delete('/api/profile', { schema: schemas.deleteProfileSchema }, async (request) => {
    await deleteAccount(ctx, callerOf(request), request.body.password);
    return { message: 'Account deleted' as const };
  });
};
