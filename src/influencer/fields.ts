import { Type } from '@sinclair/typebox';
import type { DmPolicy } from '../db/tables.js';
import { nullable } from '../http/schemas.js';
import { HttpsUrl } from '../http/https-url.js';
import { CATEGORY_SLUGS, type Category } from './categories.js';
import { DISPLAY_NAME_MAX, LABEL_MAX } from './values.js';

/**
 * The Influencer group's field schemas: the request values (outer bounds; values.ts has the
 * rules a schema cannot state) and the `influencer` object of every answer.
 */

/** One error per bad value (an `anyOf` of literals would report one per allowed value). */
export const oneOf = <T extends string>(values: readonly T[], description: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], description });

export const CategorySlug = oneOf<Category>(
  CATEGORY_SLUGS,
  'A slug from GET /api/influencers/categories.',
);
export const DmPolicySchema = oneOf<DmPolicy>(
  ['everyone', 'followers', 'nobody'],
  'Who may start a conversation (default `followers`).',
);
export const SORTS = ['popular', 'newest', 'name'] as const;
export type Sort = (typeof SORTS)[number];

// The exact rule applies after lower-casing (values.ts), reserved words first (409, not 400).
export const Handle = Type.String({
  maxLength: 64,
  description:
    '3–30 of a–z, 0–9 and _, after lower-casing (stored lower-cased). `me`, `following` and `categories` are reserved (409 handle_taken).',
});
// No outer bound but the body's size: the exact rules apply after trimming and NFC (values.ts),
// so any amount of surrounding white space is allowed.
export const DisplayName = Type.String({
  description: `1–${DISPLAY_NAME_MAX} characters after trimming and NFC; no control characters or bidirectional overrides (U+202A–202E, U+2066–2069); at least one visible character.`,
});
const Link = Type.Object({
  label: Type.String({
    description: `1–${LABEL_MAX} characters after trimming and NFC, as a display name.`,
  }),
  url: HttpsUrl,
});
export const Categories = Type.Array(CategorySlug, { minItems: 1, maxItems: 3, uniqueItems: true });
export const Links = Type.Array(Link, { maxItems: 5 });

export const time = Type.String({ format: 'date-time' });
const influencerFields = {
  id: Type.String({ format: 'uuid', description: "The account's user id." }),
  handle: Type.String(),
  display_name: Type.String(),
  bio: nullable(Type.String()),
  avatar_url: nullable(Type.String()),
  categories: Type.Array(CategorySlug),
  links: Type.Array(Type.Object({ label: Type.String(), url: Type.String() })),
  dm_policy: DmPolicySchema,
  followers_count: Type.Integer({ minimum: 0 }),
  created_at: time,
  updated_at: time,
  is_following: Type.Optional(
    Type.Boolean({ description: 'Present with a valid bearer token: the caller follows it.' }),
  ),
  can_message: Type.Optional(
    Type.Boolean({
      description: 'Present with a valid bearer token: the caller may message it right now.',
    }),
  ),
};

export const Influencer = Type.Object(influencerFields, { $id: 'Influencer', title: 'Influencer' });
export const FollowedInfluencer = Type.Object({ ...influencerFields, followed_at: time });
