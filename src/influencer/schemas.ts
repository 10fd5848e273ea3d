import { Errors } from '../errors.js';
import { Type } from '@sinclair/typebox';
import { NextCursor, pageQuery } from '../http/cursor.js';
import { HttpsUrl } from '../http/https-url.js';
import { Bio, MessageBody, nullable, withErrors } from '../http/schemas.js';
import {
  Categories,
  CategorySlug,
  DisplayName,
  DmPolicySchema,
  FollowedInfluencer,
  Handle,
  Influencer,
  Links,
  oneOf,
  SORTS,
  time,
  type Sort,
} from './fields.js';

/**
 * Request and response schemas of the Influencer group: they validate requests (no coercion) and
 * are the OpenAPI document. What a schema cannot say (trimming, NFC, code points, URL parsing) is
 * checked in values.ts and answers the same `validation_failed`.
 */

const tags = ['Influencer'];
const influencerBody = Type.Object({ influencer: Type.Ref(Influencer) });
const RefParams = Type.Object({
  ref: Type.String({ description: 'The profile id (user id) or its handle.' }),
});

export const createSchema = {
  tags,
  operationId: 'createInfluencerProfile',
  summary: "Add a public influencer profile to the caller's (confirmed) account",
  body: Type.Object({
    handle: Handle,
    display_name: DisplayName,
    categories: Categories,
    bio: Type.Optional(nullable(Bio)),
    avatar_url: Type.Optional(nullable(HttpsUrl)),
    links: Type.Optional(Links),
    dm_policy: Type.Optional(DmPolicySchema),
  }),
  response: withErrors(
    {
      201: Type.Object({
        message: Type.Literal('Influencer profile created'),
        influencer: Type.Ref(Influencer),
      }),
    },
    Errors.validationFailed,
    Errors.emailNotConfirmed,
    Errors.alreadyInfluencer,
    Errors.handleTaken,
  ),
};

export const getMineSchema = {
  tags,
  operationId: 'getMyInfluencerProfile',
  summary: "The caller's influencer profile",
  response: withErrors({ 200: influencerBody }, Errors.notInfluencer),
};

export const updateMineSchema = {
  tags,
  operationId: 'updateMyInfluencerProfile',
  summary: "Change any fields of the caller's profile (`null` clears bio and avatar_url)",
  body: Type.Object({
    handle: Type.Optional(Handle),
    display_name: Type.Optional(DisplayName),
    categories: Type.Optional(Categories),
    bio: Type.Optional(nullable(Bio)),
    avatar_url: Type.Optional(nullable(HttpsUrl)),
    links: Type.Optional(Links),
    dm_policy: Type.Optional(DmPolicySchema),
  }),
  response: withErrors(
    {
      200: Type.Object({
        message: Type.Literal('Influencer profile updated'),
        influencer: Type.Ref(Influencer),
      }),
    },
    Errors.validationFailed,
    Errors.notInfluencer,
    Errors.handleTaken,
  ),
};

export const deleteMineSchema = {
  tags,
  operationId: 'deleteMyInfluencerProfile',
  summary: "Delete the caller's influencer profile and its follows",
  response: withErrors({ 200: MessageBody('Influencer profile deleted') }, Errors.notInfluencer),
};

export const getSchema = {
  tags,
  operationId: 'getInfluencer',
  summary: 'One influencer, by id or handle',
  params: RefParams,
  response: withErrors({ 200: influencerBody }, Errors.notFound),
};

export const listSchema = {
  tags,
  operationId: 'listInfluencers',
  summary: 'The directory: search, filter by category, sort, page',
  querystring: Type.Object({
    q: Type.Optional(
      // No outer bound but the URL's: q is trimmed first, then must be 1–100 code points.
      Type.String({
        description:
          '1–100 characters after trimming. 1–2 match the start of the handle or of a word of the display name; 3+ match anywhere. Case- and accent-insensitive.',
      }),
    ),
    category: Type.Optional(CategorySlug),
    sort: Type.Optional(oneOf<Sort>(SORTS, '`popular` (default), `newest` or `name`.')),
    ...pageQuery(),
  }),
  response: withErrors(
    {
      200: Type.Object({ influencers: Type.Array(Type.Ref(Influencer)), next_cursor: NextCursor }),
    },
    Errors.validationFailed,
    Errors.invalidCursor,
  ),
};

export const categoriesSchema = {
  tags,
  operationId: 'listInfluencerCategories',
  summary: 'The fixed list of directory categories',
  response: withErrors({
    200: Type.Object({
      categories: Type.Array(Type.Object({ slug: Type.String(), name: Type.String() })),
    }),
  }),
};

const followBody = (following: boolean) =>
  Type.Object({ following: Type.Literal(following), followers_count: Type.Integer() });

export const followSchema = {
  tags,
  operationId: 'followInfluencer',
  summary: 'Follow an influencer (repeating it changes nothing)',
  params: RefParams,
  response: withErrors(
    { 200: followBody(true) },
    Errors.cannotFollowSelf,
    Errors.cannotFollow,
    Errors.userBlocked,
    Errors.notFound,
    Errors.tooManyChanges,
  ),
};

export const unfollowSchema = {
  tags,
  operationId: 'unfollowInfluencer',
  summary: 'Stop following an influencer (repeating it changes nothing)',
  params: RefParams,
  response: withErrors({ 200: followBody(false) }, Errors.notFound, Errors.tooManyChanges),
};

export const followingSchema = {
  tags,
  operationId: 'listFollowing',
  summary: 'The influencers the caller follows, newest follow first',
  querystring: Type.Object(pageQuery()),
  response: withErrors(
    {
      200: Type.Object({ influencers: Type.Array(FollowedInfluencer), next_cursor: NextCursor }),
    },
    Errors.invalidCursor,
  ),
};

export const followersSchema = {
  tags,
  operationId: 'listMyFollowers',
  summary: "The accounts following the caller's profile, newest first",
  querystring: Type.Object(pageQuery()),
  response: withErrors(
    {
      200: Type.Object({
        followers: Type.Array(
          Type.Object({
            id: Type.String({ format: 'uuid' }),
            name: nullable(Type.String()),
            avatar_url: nullable(Type.String()),
            followed_at: time,
          }),
        ),
        next_cursor: NextCursor,
      }),
    },
    Errors.invalidCursor,
    Errors.notInfluencer,
  ),
};
