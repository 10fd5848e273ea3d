import type { Kysely } from 'kysely';
import { facetRows } from '../../influencer/profiles.store.js';
import { symbolFacets } from '../../influencer/search-text.js';
import { insertFacetRows, listedProfiles } from './listed-profiles.js';

/**
 * Lists every existing profile under its symbol facets (`s:<symbol>`, search-text.ts
 * `symbolFacets`), which profiles written from now on get with the others: a directory query of
 * symbols alone walks one of them instead of reading PostgreSQL's whole trigram index. Computed
 * by the service's own function, as every facet is.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for await (const profiles of listedProfiles(db)) {
    const rows = profiles.flatMap((profile) =>
      facetRows(profile, symbolFacets(profile.handle, profile.search_name)),
    );
    await insertFacetRows(db, rows);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const typed = db as Kysely<{ influencer_facets: { facet: string } }>;
  await typed.deleteFrom('influencer_facets').where('facet', 'like', 's:%').execute();
}
