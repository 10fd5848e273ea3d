import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { up } from '../../src/db/migrations/007_symbol_facets.js';
import { newProfile } from '../../src/influencer/profiles.js';
import type { ProfileEntry } from '../../src/influencer/profiles.store.js';
import { facetsOf } from '../../src/influencer/search-text.js';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { insertDirectory, seedDirectory } from '../influencer/seed.js';

/**
 * 007 lists the profiles that existed before it under their symbol facets, with the same sort
 * keys as their other facets: as if they had been written by today's service.
 */
describe.each(backends)('migration 007: symbol facets of existing profiles ($name)', (backend) => {
  let t: TestApp;
  let entries: ProfileEntry[];

  beforeAll(async () => {
    t = await TestApp.start(backend);
    // More profiles than one round of the migration reads; the seeded O’Briens have a symbol.
    entries = await seedDirectory(t.db, 1_200);
    const symbolic = newProfile(
      randomUUID(),
      { handle: 'ada__l', display_name: 'Ada 🔥 L.-L.', categories: ['tech'] },
      Date.now(),
    );
    const extra = { profile: { ...symbolic, followers_count: 7 }, facets: facetsOf(symbolic) };
    await insertDirectory(t.db, [extra]);
    entries.push(extra);
  }, 60_000);
  afterAll(() => t.close());

  const symbolRows = () =>
    t.db
      .selectFrom('influencer_facets')
      .select(['influencer_id', 'facet', 'followers_count', 'created_at', 'search_name', 'handle'])
      .where('facet', 'like', 's:%')
      .execute();

  it('writes exactly the symbol facets the service writes, with each profile’s sort keys', async () => {
    const written = await symbolRows();
    await t.db.deleteFrom('influencer_facets').where('facet', 'like', 's:%').execute();
    expect(await symbolRows()).toEqual([]);

    // As the Migrator runs it on PostgreSQL: in a transaction (it locks the profiles for its span).
    await t.db.transaction().execute((trx) => up(trx as unknown as Kysely<unknown>));

    const key = (row: { influencer_id: string; facet: string }) =>
      `${row.influencer_id} ${row.facet}`;
    const expected = entries.flatMap(({ profile, facets }) =>
      facets
        .filter((facet) => facet.startsWith('s:'))
        .map((facet) => ({
          influencer_id: profile.id,
          facet,
          followers_count: profile.followers_count,
          created_at: profile.created_at,
          search_name: profile.search_name,
          handle: profile.handle,
        })),
    );
    const migrated = await symbolRows();
    const sorted = <T extends { influencer_id: string; facet: string }>(rows: T[]) =>
      [...rows].sort((a, b) => key(a).localeCompare(key(b)));
    expect(expected.length).toBeGreaterThan(30);
    expect(new Set(expected.map((row) => row.facet))).toEqual(
      new Set(["s:'", 's:🔥', 's:.', 's:-', 's:_']),
    );
    expect(sorted(migrated).map((row) => ({ ...row, created_at: Number(row.created_at) }))).toEqual(
      sorted(expected),
    );
    expect(sorted(migrated)).toEqual(sorted(written));
  });
});
