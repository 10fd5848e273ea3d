import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { isPostgres } from '../../src/db/dialect.js';
import {
  facetPageQuery,
  substringPageQuery,
  walkPageQuery,
  type Slice,
} from '../../src/influencer/directory.queries.js';
import { pageOfFacet, pageOfSubstring } from '../../src/influencer/directory.store.js';
import { newProfile } from '../../src/influencer/profiles.js';
import { insertProfiles } from '../../src/influencer/profiles.store.js';
import {
  categoryFacet,
  EVERYONE_FACET,
  facetsOf,
  prefixFacet,
  symbolFacet,
} from '../../src/influencer/search-text.js';
import { backends } from '../helpers/backends.js';
import { queryPlan } from '../helpers/query-plan.js';
import { TestApp } from '../helpers/test-app.js';
import { confirmedAccount } from './support.js';
import { seedDirectory } from './seed.js';

/**
 * The directory's queries use their indexes, shown by the databases' own plans (EXPLAIN QUERY
 * PLAN on SQLite, EXPLAIN on PostgreSQL) on a directory large enough, and ANALYZEd, for
 * PostgreSQL's planner to prefer an index on its own merits.
 */
const DIRECTORY_SIZE = 5_000;

/** A full scan of the profiles table, in either database's words. */
const PROFILES_SCAN = /Seq Scan on influencer_profiles|SCAN (p|influencer_profiles)\b(?! USING)/;

describe.each(backends)('directory query plans ($name)', (backend) => {
  let t: TestApp;
  let postgres: boolean;
  const popular = (extra: Partial<Slice> = {}): Slice => ({
    sort: 'popular',
    after: undefined,
    limit: 21,
    ...extra,
  });

  beforeAll(async () => {
    t = await TestApp.start(backend);
    postgres = isPostgres(t.db);
    await seedDirectory(t.db, DIRECTORY_SIZE);
    // A few profiles with a rare name, for the substring index to find.
    const account = await confirmedAccount(t);
    const rare = newProfile(
      account.userId,
      { handle: 'quokka_fan', display_name: 'Quokka Qwerty ..’', categories: ['travel'] },
      Date.now(),
    );
    await insertProfiles(t.db, [{ profile: rare, facets: facetsOf(rare) }]);
    await sql`analyze`.execute(t.db);
  }, 120_000);
  afterAll(() => t.close());

  it('a substring search of a rare text goes through the substring index', async () => {
    const text = await queryPlan(t.db, substringPageQuery(t.db, 'qwert', popular()));
    if (postgres)
      expect(text).toMatch(/Bitmap Index Scan on influencer_profiles_(name|handle)_trgm/);
    else expect(text).toMatch(/SCAN influencer_search VIRTUAL TABLE INDEX/);
    if (!postgres) expect(text).toMatch(/SEARCH p USING INTEGER PRIMARY KEY/);
    expect(text).not.toMatch(PROFILES_SCAN);
  });

  it('a substring search first walks the popular index a bounded distance, index only', async () => {
    const text = await queryPlan(t.db, walkPageQuery(t.db, EVERYONE_FACET, 'mar', popular()));
    // The index carries the searched text: the walk never reads the facets table.
    if (postgres) expect(text).toMatch(/Index Only Scan using influencer_facets_popular/);
    else expect(text).toMatch(/SEARCH f USING COVERING INDEX influencer_facets_popular/);
    expect(text).not.toMatch(PROFILES_SCAN);
  });

  it('a prefix search walks the index of its prefix facet', async () => {
    const text = await queryPlan(t.db, facetPageQuery(t.db, prefixFacet('ma'), popular()));
    if (postgres) expect(text).toMatch(/Index (Only )?Scan using influencer_facets_popular/);
    else
      expect(text).toMatch(
        /SEARCH f USING (COVERING )?INDEX influencer_facets_popular \(facet=\?\)/,
      );
    expect(text).not.toMatch(PROFILES_SCAN);
    expect(text).not.toMatch(/Sort|TEMP B-TREE/);
  });

  it("a category's popular page, and a later page by keyset, walk the category's index", async () => {
    const first = await queryPlan(t.db, facetPageQuery(t.db, categoryFacet('music'), popular()));
    const later = await queryPlan(
      t.db,
      facetPageQuery(t.db, categoryFacet('music'), popular({ after: { value: 12, id: 'm' } })),
    );
    for (const text of [first, later]) {
      if (postgres) expect(text).toMatch(/Index (Only )?Scan using influencer_facets_popular/);
      else expect(text).toMatch(/SEARCH f USING (COVERING )?INDEX influencer_facets_popular/);
      expect(text).not.toMatch(PROFILES_SCAN);
      expect(text).not.toMatch(/Sort|TEMP B-TREE/);
    }
    if (postgres) expect(later).toMatch(/ROW\(followers_count, influencer_id\) < ROW/);
    else expect(later).toMatch(/\(followers_count,influencer_id\)<\(\?,\?\)/);
  });

  it('the newest and name sorts have their own indexes', async () => {
    const newest = await queryPlan(
      t.db,
      facetPageQuery(t.db, EVERYONE_FACET, popular({ sort: 'newest' })),
    );
    const name = await queryPlan(
      t.db,
      facetPageQuery(t.db, EVERYONE_FACET, popular({ sort: 'name' })),
    );
    expect(newest).toMatch(/influencer_facets_newest/);
    expect(name).toMatch(/influencer_facets_name/);
    for (const text of [newest, name]) expect(text).not.toMatch(/Sort|TEMP B-TREE/);
  });

  it('a prefix within a category walks the smaller of the two facets, checking the other per row', async () => {
    const config = loadConfig(t.backend.env);
    const walked: unknown[] = [];
    const db = await openDatabase(config.database, {
      log: (event) => {
        if (/from "influencer_facets" as "f"/.test(event.query.sql))
          walked.push(event.query.parameters.find((p) => /^[cp]:/.test(String(p))));
      },
    });
    try {
      const size = async (facet: string) =>
        Number(
          (
            await t.db
              .selectFrom('influencer_facets')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('facet', '=', facet)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const travel = categoryFacet('travel');
      // 'qu' is rare (the quokka fan); 'm' starts a word of many names, more than travel has.
      expect(await size(prefixFacet('qu'))).toBeLessThan(await size(travel));
      expect(await size(prefixFacet('m'))).toBeGreaterThan(await size(travel));
      const rare = await pageOfFacet(db, prefixFacet('qu'), popular({ alsoFacet: travel }));
      const common = await pageOfFacet(db, prefixFacet('m'), popular({ alsoFacet: travel }));
      expect(walked).toEqual([prefixFacet('qu'), travel]);
      expect(rare.map((row) => row.profile.handle)).toEqual(['quokka_fan']);
      expect(common).toHaveLength(21);
      for (const { profile } of common) expect(profile.categories).toContain('travel');
    } finally {
      await db.destroy();
    }
  });

  it("a query of symbols alone walks its smallest symbol's facet on PostgreSQL, not the trigram index", async () => {
    const config = loadConfig(t.backend.env);
    const statements: { sql: string; parameters: readonly unknown[] }[] = [];
    const db = await openDatabase(config.database, {
      log: (event) => void statements.push(event.query),
    });
    try {
      // "'" is in every O’Brien's folded name; '.' only in the quokka fan's.
      const page = await pageOfSubstring(db, EVERYONE_FACET, "..'", popular());
      expect(page.map((row) => row.profile.handle)).toEqual(['quokka_fan']);
      const read = statements.map((s) => s.sql).join('\n');
      if (!postgres) {
        expect(read).toMatch(/influencer_search/); // SQLite's trigram table indexes every character
        return;
      }
      // pg_trgm sees letters and digits only: this text has no trigram, the GIN index would be
      // read whole (and the bounded walk of the popular index would find nothing first).
      expect(read).not.toMatch(/ like /i);
      const walked = statements.filter((s) => /from "influencer_facets" as "f"/.test(s.sql));
      expect(walked.map((s) => s.parameters.find((p) => /^s:/.test(String(p))))).toEqual([
        symbolFacet('.'),
      ]);
      const plan = await queryPlan(
        t.db,
        facetPageQuery(t.db, symbolFacet('.'), popular({ contains: "..'" })),
      );
      expect(plan).toMatch(/Index (Only )?Scan using influencer_facets_popular/);
      expect(plan).not.toMatch(/trgm|Sort/);
    } finally {
      await db.destroy();
    }
  });

  it('PostgreSQL plans each directory statement once, not for every page', async () => {
    if (!postgres) return;
    // One connection (a transaction's) keeps its prepared statements and counts their plans.
    await t.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 8; i++) {
        for (const category of ['music', 'food', 'travel']) {
          const facet = categoryFacet(category);
          await pageOfFacet(trx, facet, popular());
          await pageOfFacet(trx, facet, popular({ after: { value: 40 - i, id: 'm' } }));
          await pageOfFacet(trx, EVERYONE_FACET, popular({ sort: 'name' }));
          await pageOfSubstring(trx, EVERYONE_FACET, 'ma' + 'rt'.slice(0, i % 2), popular());
          await pageOfSubstring(trx, facet, 'qwert', popular());
        }
      }
      const { rows } = await sql<{ statement: string; generic_plans: string; runs: string }>`
        select statement, generic_plans, generic_plans + custom_plans as runs
        from pg_prepared_statements where statement like '%influencer_%'`.execute(trx);
      const often = rows.filter((row) => Number(row.runs) > 6);
      expect(often.length).toBeGreaterThanOrEqual(4);
      // PostgreSQL plans a prepared statement's first five runs for their values, then keeps
      // its generic plan only if that looks no dearer: a `limit $n`, or a facet or keyset value
      // in view, made every run plan afresh.
      for (const row of often) expect(Number(row.generic_plans), row.statement).toBeGreaterThan(0);
    });
  });
});
