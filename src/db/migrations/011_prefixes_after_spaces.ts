import type { Kysely } from 'kysely';
import { facetRows } from '../../influencer/profiles.store.js';
import { prefixFacet, prefixTokens } from '../../influencer/search-text.js';

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
 * A word of a display name now also starts after white space where Unicode's word boundaries see
 * none (`#music`, `@ada`, `🔥`: search-text.ts `wordStarts`), so a 1- or 2-character query finds
 * it. Lists every existing profile under the prefix facets it lacks, computed by the service's own
 * function, as every facet is (only names with such words lack any).
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
    const last = profiles.at(-1);
    if (last === undefined) return;
    const listed = await db
      .selectFrom('influencer_facets')
      .select(['influencer_id', 'facet'])
      .where(
        'influencer_id',
        'in',
        profiles.map((profile) => profile.id),
      )
      .where('facet', 'like', 'p:%')
      .execute();
    const has = new Set(listed.map((row) => `${row.influencer_id} ${row.facet}`));
    const rows = profiles.flatMap((profile) =>
      facetRows(
        { ...profile, created_at: Number(profile.created_at) },
        prefixTokens(profile.handle, profile.search_name)
          .map(prefixFacet)
          .filter((facet) => !has.has(`${profile.id} ${facet}`)),
      ),
    );
    for (let i = 0; i < rows.length; i += BATCH)
      await db
        .insertInto('influencer_facets')
        .values(rows.slice(i, i + BATCH))
        .execute();
    if (profiles.length < BATCH) return;
    after = last.id;
  }
}

/** The facets stay: a profile written again loses those the rule it is written by does not make. */
export async function down(): Promise<void> {}
