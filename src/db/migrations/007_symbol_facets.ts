import type { Kysely } from 'kysely';
import { facetRows } from '../../influencer/profiles.store.js';
import { symbolFacets } from '../../influencer/search-text.js';

interface ListedProfile {
  id: string;
  handle: string;
  search_name: string;
  followers_count: number;
  created_at: number | string;
}

/** Profiles read per round, and facet rows per INSERT (well under either database's limit). */
const BATCH = 500;

/**
 * Lists every existing profile under its symbol facets (`s:<symbol>`, search-text.ts
 * `symbolFacets`), which profiles written from now on get with the others: a directory query of
 * symbols alone walks one of them instead of reading PostgreSQL's whole trigram index. Computed
 * by the service's own function, as every facet is.
 */
export async function up(untyped: Kysely<unknown>): Promise<void> {
  const db = untyped as Kysely<{
    influencer_profiles: ListedProfile;
    influencer_facets: ReturnType<typeof facetRows>[number];
  }>;
  for (let after = ''; ;) {
    const profiles = await db
      .selectFrom('influencer_profiles')
      .select(['id', 'handle', 'search_name', 'followers_count', 'created_at'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    const rows = profiles.flatMap((profile) =>
      facetRows(
        { ...profile, created_at: Number(profile.created_at) },
        symbolFacets(profile.handle, profile.search_name),
      ),
    );
    for (let i = 0; i < rows.length; i += BATCH)
      await db
        .insertInto('influencer_facets')
        .values(rows.slice(i, i + BATCH))
        .execute();
    const last = profiles.at(-1);
    if (last === undefined || profiles.length < BATCH) return;
    after = last.id;
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const typed = db as Kysely<{ influencer_facets: { facet: string } }>;
  await typed.deleteFrom('influencer_facets').where('facet', 'like', 's:%').execute();
}
