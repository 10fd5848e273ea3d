import type { Kysely } from 'kysely';
import { facetRows } from '../../influencer/profiles.store.js';
import { prefixFacet, prefixTokens } from '../../influencer/search-text.js';
import { insertFacetRows, listedProfiles, type FacetTables } from './listed-profiles.js';

/**
 * A word of a display name now also starts after white space where Unicode's word boundaries see
 * none (`#music`, `@ada`, `🔥`: search-text.ts `wordStarts`), so a 1- or 2-character query finds
 * it. Lists every existing profile under the prefix facets it lacks, computed by the service's own
 * function, as every facet is (only names with such words lack any).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for await (const profiles of listedProfiles(db)) {
    const listed = await (db as FacetTables)
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
        profile,
        prefixTokens(profile.handle, profile.search_name)
          .map(prefixFacet)
          .filter((facet) => !has.has(`${profile.id} ${facet}`)),
      ),
    );
    await insertFacetRows(db, rows);
  }
}

/** The facets stay: a profile written again loses those the rule it is written by does not make. */
export async function down(): Promise<void> {}
