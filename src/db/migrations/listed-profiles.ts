import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.js';
import { facetRows } from '../../influencer/profiles.store.js';
import { prefixFacet, prefixTokens } from '../../influencer/search-text.js';

export interface ListedProfile {
  id: string;
  handle: string;
  display_name: string;
  search_name: string;
  /** JSON array of category slugs. */
  categories: string;
  followers_count: number;
  created_at: number;
}

/** The tables a migration of directory facets reads and writes. */
export type FacetTables = Kysely<{
  influencer_profiles: Omit<ListedProfile, 'created_at'> & { created_at: number | string };
  influencer_facets: ReturnType<typeof facetRows>[number];
}>;

/** Profiles read per round, and facet rows per INSERT (well under either database's limit). */
const BATCH = 500;

/**
 * Every influencer profile, in rounds of BATCH by id, with what its facet rows copy.
 *
 * On PostgreSQL the profiles are locked against writes until the migration's transaction ends
 * (EXCLUSIVE: reads go on): an instance of the former build serving meanwhile would otherwise add
 * a follow to the facet rows it sees, not to those the migration is inserting with the count it
 * read, and the copies would stay off for good (the directory sorts by the copy, its cursor
 * carries the profile's count: paging would repeat a profile forever). Its writes wait instead.
 * Not SHARE, which lets `SELECT … FOR UPDATE` through: a deletion or a block locks its profile
 * rows that way first, then waits for the table, while the migration's facet insert waits for
 * that row (its foreign key): a deadlock, which aborted the migration, and the deploy.
 */
export async function* listedProfiles(untyped: Kysely<unknown>): AsyncGenerator<ListedProfile[]> {
  const db = untyped as FacetTables;
  if (isPostgres(db)) await sql`lock table influencer_profiles in exclusive mode`.execute(db);
  for (let after = ''; ;) {
    const profiles = await db
      .selectFrom('influencer_profiles')
      .select([
        'id',
        'handle',
        'display_name',
        'search_name',
        'categories',
        'followers_count',
        'created_at',
      ])
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    const last = profiles.at(-1);
    if (last === undefined) return;
    yield profiles.map((profile) => ({ ...profile, created_at: Number(profile.created_at) }));
    if (profiles.length < BATCH) return;
    after = last.id;
  }
}

/**
 * Inserts facet rows, BATCH at a time; a row already there stays (an instance of the former
 * build may rewrite a profile's facets while the migration runs).
 */
export async function insertFacetRows(
  untyped: Kysely<unknown>,
  rows: ReturnType<typeof facetRows>,
): Promise<void> {
  const db = untyped as FacetTables;
  for (let i = 0; i < rows.length; i += BATCH)
    await db
      .insertInto('influencer_facets')
      .values(rows.slice(i, i + BATCH))
      .onConflict((conflict) => conflict.doNothing())
      .execute();
}

/**
 * Lists every existing profile under the prefix facets today's rule (search-text.ts
 * `prefixTokens`) gives it and it lacks: for a migration that widens the rule. Facets the rule no
 * longer gives stay until the profile is written again.
 */
export async function addMissingPrefixFacets(untyped: Kysely<unknown>): Promise<void> {
  const db = untyped as FacetTables;
  for await (const profiles of listedProfiles(untyped)) {
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
        profile,
        prefixTokens(profile.handle, profile.search_name)
          .map(prefixFacet)
          .filter((facet) => !has.has(`${profile.id} ${facet}`)),
      ),
    );
    await insertFacetRows(untyped, rows);
  }
}
