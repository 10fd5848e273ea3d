import { sql, type Kysely } from 'kysely';
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
    if (changed.length === 0) continue;
    // One statement per round, not one per profile: PostgreSQL's writers wait for the lock.
    const ids = changed.map((profile) => profile.id);
    const newName = sql<string>`case id ${sql.join(
      changed.map((profile) => sql`when ${profile.id} then ${profile.search_name}`),
      sql` `,
    )} end`;
    await db
      .updateTable('influencer_profiles')
      .set({ search_name: newName })
      .where('id', 'in', ids)
      .execute();
    await db.deleteFrom('influencer_facets').where('influencer_id', 'in', ids).execute();
    const rows = changed.flatMap((profile) =>
      facetRows(
        profile,
        facetsOf({ ...profile, categories: JSON.parse(profile.categories) as string[] }),
      ),
    );
    await insertFacetRows(untyped, rows);
  }
}

/**
 * Not undone. After a rollback, the earlier release folds a query its way (`Søren` → `søren`) and
 * misses the names stored refolded (`soren`) until they are written again; and a profile that an
 * instance of the earlier release writes while or after this runs (a rolling deploy) keeps the
 * old fold until it is written again. Folding the names back would need the old fold's code.
 */
export async function down(): Promise<void> {}
