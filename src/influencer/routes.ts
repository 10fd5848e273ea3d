import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../context.js';
import { callerOf } from '../http/authenticate.js';
import { WRITTEN_AS_BUILT } from '../http/serializer.js';
import type { Binding, Keyset } from '../http/cursor.js';
import { CATEGORIES } from './categories.js';
import { searchDirectory } from './directory.js';
import { follow, listFollowing, listMyFollowers, unfollow } from './follows.js';
import {
  createProfile,
  deleteMyProfile,
  getMyProfile,
  getProfileByRef,
  updateMyProfile,
} from './profiles.js';
import * as schemas from './schemas.js';

interface Options {
  readonly ctx: ServiceContext;
}

const OPTIONAL = { access: 'optional' } as const;
const BEARER = { access: 'bearer' } as const;

/**
 * The Influencer group: HTTP shape only; the rules are in profiles.ts, follows.ts and
 * directory.ts. `/api/influencers/me`, `/following` and `/categories` are static paths, which
 * Fastify's router prefers to `/:ref` (and no handle can be one of those words).
 */
export const influencerRoutes: FastifyPluginAsyncTypebox<Options> = async (app, { ctx }) => {
  const nextCursor = (binding: Binding, next: Keyset | undefined) =>
    ctx.cursors.next(binding, next);

  app.post(
    '/api/influencers',
    { config: BEARER, schema: schemas.createSchema },
    async (request, reply) => {
      const influencer = await createProfile(ctx, callerOf(request), request.body);
      return reply.code(201).send({ message: 'Influencer profile created' as const, influencer });
    },
  );

  app.get(
    '/api/influencers/me',
    { config: BEARER, schema: schemas.getMineSchema },
    async (request) => {
      return { influencer: await getMyProfile(ctx, callerOf(request)) };
    },
  );

  app.patch(
    '/api/influencers/me',
    { config: BEARER, schema: schemas.updateMineSchema },
    async (request) => {
      const influencer = await updateMyProfile(ctx, callerOf(request), request.body);
      return { message: 'Influencer profile updated' as const, influencer };
    },
  );

  app.delete(
    '/api/influencers/me',
    { config: BEARER, schema: schemas.deleteMineSchema },
    async (request) => {
      await deleteMyProfile(ctx, callerOf(request));
      return { message: 'Influencer profile deleted' as const };
    },
  );

  const listPage = { ...WRITTEN_AS_BUILT, config: OPTIONAL, schema: schemas.listSchema };
  app.get('/api/influencers', listPage, async (request) => {
    const { q, category, sort = 'popular' } = request.query;
    const binding: Binding = ['influencers', sort, category, q];
    const page = ctx.cursors.page(request.query, binding);
    const result = await searchDirectory(ctx, request.caller, { q, category, sort, page });
    return { influencers: result.influencers, next_cursor: nextCursor(binding, result.next) };
  });

  app.get(
    '/api/influencers/categories',
    // A token, when sent, keeps the request out of the anonymous per-IP budget (API.md).
    { config: OPTIONAL, schema: schemas.categoriesSchema },
    async () => {
      return { categories: CATEGORIES.map(({ slug, name }) => ({ slug, name })) };
    },
  );

  app.get(
    '/api/influencers/following',
    { ...WRITTEN_AS_BUILT, config: BEARER, schema: schemas.followingSchema },
    async (request) => {
      const caller = callerOf(request);
      const binding: Binding = ['following', caller.userId];
      const page = ctx.cursors.page(request.query, binding);
      const result = await listFollowing(ctx, caller, page);
      return { influencers: result.influencers, next_cursor: nextCursor(binding, result.next) };
    },
  );

  app.get(
    '/api/influencers/me/followers',
    { ...WRITTEN_AS_BUILT, config: BEARER, schema: schemas.followersSchema },
    async (request) => {
      const caller = callerOf(request);
      const binding: Binding = ['followers', caller.userId];
      const page = ctx.cursors.page(request.query, binding);
      const result = await listMyFollowers(ctx, caller, page);
      return { followers: result.followers, next_cursor: nextCursor(binding, result.next) };
    },
  );

  app.get(
    '/api/influencers/:ref',
    { config: OPTIONAL, schema: schemas.getSchema },
    async (request) => {
      return { influencer: await getProfileByRef(ctx, request.caller, request.params.ref) };
    },
  );

  app.put(
    '/api/influencers/:ref/follow',
    { config: BEARER, schema: schemas.followSchema },
    async (request) => follow(ctx, callerOf(request), request.params.ref),
  );

  app.delete(
    '/api/influencers/:ref/follow',
    { config: BEARER, schema: schemas.unfollowSchema },
    async (request) => unfollow(ctx, callerOf(request), request.params.ref),
  );
};
