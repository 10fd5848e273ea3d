import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { up } from '../../src/db/migrations/015_look_alikes_folded.js';
import { facetRows } from '../../src/influencer/profiles.store.js';
import { facetsOf } from '../../src/influencer/search-text.js';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { creator } from '../influencer/support.js';

/**
 * 015 refolds the names of profiles written before look-alikes were folded (`’`, `–`, `ø`, `❤️`
 * kept as typed), and lists them under the facets today's service gives them: as if written now.
 */
describe.each(backends)('migration 015: look-alikes folded ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const listing = async (id: string) => ({
    search_name: (
      await t.db
        .selectFrom('influencer_profiles')
        .select('search_name')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    ).search_name,
    facets: await t.db
      .selectFrom('influencer_facets')
      .select(['facet', 'search_name'])
      .where('influencer_id', '=', id)
      .orderBy('facet')
      .execute(),
  });
  const found = async (q: string) =>
    (await t.call('GET', `/api/influencers?${new URLSearchParams({ q })}`))
      .json()
      .influencers.map((influencer: { id: string }) => influencer.id);

  it('gives the profiles written before it the names and facets today’s service writes', async () => {
    const names = ['Søren O’Neil ❤\ufe0f', 'Ada – Live', 'Plain Name'];
    const profiles = [];
    for (const display_name of names) profiles.push(await creator(t, { display_name }));
    const today = await Promise.all(profiles.map((profile) => listing(profile.id)));
    // As the earlier release wrote the first two: the fold kept what it did not know.
    const before = [
      ['søren o’neil ❤\ufe0f', 's:’'],
      ['ada – live', 's:–'],
    ];
    for (const [i, [search_name, stale]] of before.entries()) {
      const id = profiles[i]!.id;
      const row = await t.db
        .updateTable('influencer_profiles')
        .set({ search_name })
        .where('id', '=', id)
        .returning(['id', 'handle', 'followers_count', 'created_at', 'search_name'])
        .executeTakeFirstOrThrow();
      const listedBefore = facetsOf({ ...row, categories: ['music'] }); // as creator() made them
      expect(listedBefore).toContain(stale); // gone after the migration
      await t.db.deleteFrom('influencer_facets').where('influencer_id', '=', id).execute();
      await t.db
        .insertInto('influencer_facets')
        .values(facetRows({ ...row, created_at: Number(row.created_at) }, listedBefore))
        .execute();
    }
    expect(await found("o'neil")).toEqual([]);

    await t.db.transaction().execute((trx) => up(trx as unknown as Kysely<unknown>));

    expect(await Promise.all(profiles.map((profile) => listing(profile.id)))).toEqual(today);
    expect(today[0]!.search_name).toBe("soren o'neil ❤");
    expect(await found("o'neil")).toEqual([profiles[0]!.id]);
    expect(await found('ne')).toEqual([profiles[0]!.id]);
    expect(await found('ada - live')).toEqual([profiles[1]!.id]);
  });
});
