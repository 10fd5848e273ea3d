/** The directory's fixed categories (API.md), in the order `GET /api/influencers/categories` lists them. */
export const CATEGORIES = [
  { slug: 'art', name: 'Art' },
  { slug: 'beauty', name: 'Beauty' },
  { slug: 'comedy', name: 'Comedy' },
  { slug: 'education', name: 'Education' },
  { slug: 'fashion', name: 'Fashion' },
  { slug: 'fitness', name: 'Fitness' },
  { slug: 'food', name: 'Food' },
  { slug: 'gaming', name: 'Gaming' },
  { slug: 'lifestyle', name: 'Lifestyle' },
  { slug: 'music', name: 'Music' },
  { slug: 'science', name: 'Science' },
  { slug: 'sports', name: 'Sports' },
  { slug: 'tech', name: 'Tech' },
  { slug: 'travel', name: 'Travel' },
  { slug: 'other', name: 'Other' },
] as const;

export type Category = (typeof CATEGORIES)[number]['slug'];

export const CATEGORY_SLUGS: readonly Category[] = CATEGORIES.map((c) => c.slug);
