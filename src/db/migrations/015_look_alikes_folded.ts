import type { Kysely } from 'kysely';
import { facetRows } from '../../influencer/profiles.store.js';
import { facetsOf, foldSearchText } from '../../influencer/search-text.js';
import { insertFacetRows, listedProfiles, type FacetTables } from './listed-profiles.js';

/**
 * The search fold now makes look-alikes one (search-text.ts LOOK_ALIKES: `’` is `'`, `–` is `-`,
 * `ø` is `o`, `❤️` is `❤`). Every profile whose display name folds differently now gets its new
 * `search_name` (SQLite's FTS5 table follows by trigger), and is listed again under exactly the
 * facets it gives, each with the new copy of the name (the `name` sort reads it).
 */
export async function up(untyped: Kysely<unknown>): Promise<void> {
  const db = untyped as FacetTables;
  for await (const profiles of listedProfiles(untyped)) {
    const changed = profiles
      .map((profile) => ({ ...profile, search_name: foldSearchText(profile.display_name) }))
      .filter((profile, i) => profile.search_name !== profiles[i]?.search_name);
    for (const profile of changed)
      await db
        .updateTable('influencer_profiles')
        .set({ search_name: profile.search_name })
        .where('id', '=', profile.id)
        .execute();
    if (changed.length === 0) continue;
    await db
      .deleteFrom('influencer_facets')
      .where(
        'influencer_id',
        'in',
        changed.map((profile) => profile.id),
      )
      .execute();
    const rows = changed.flatMap((profile) =>
      facetRows(
        profile,
        facetsOf({ ...profile, categories: JSON.parse(profile.categories) as string[] }),
      ),
    );
    await insertFacetRows(untyped, rows);
  }
}

/** The new names stay: the earlier release searches them as it would any profile it wrote. */
export async function down(): Promise<void> {}
