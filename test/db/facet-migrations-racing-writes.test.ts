import {
  sql,
  type Kysely,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { up as symbolFacets } from '../../src/db/migrations/007_symbol_facets.js';
import { up as prefixesAfterSpaces } from '../../src/db/migrations/011_prefixes_after_spaces.js';
import { up as prefixesAfterApostrophes } from '../../src/db/migrations/012_prefixes_after_apostrophes.js';
import { up as lookAlikesFolded } from '../../src/db/migrations/015_look_alikes_folded.js';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';
import { confirmedAccount, creator } from '../influencer/support.js';

/**
 * The migrations that add facet rows to existing profiles copy each profile's followers_count
 * into them. On PostgreSQL an instance of the former build may serve while they run (a rolling
 * deploy): a follow it commits meanwhile must reach the copies the migration adds, or they stay
 * off for good and paging the directory by the copy never ends. (SQLite runs one write
 * transaction at a time: a follow cannot commit inside a migration.)
 */
const postgres = backends.find((backend) => backend.name.startsWith('postgres'));

/** Runs `meanwhile` once, right after the migration's first query answered. */
class AfterFirstQuery implements KyselyPlugin {
  private done = false;
  constructor(private readonly meanwhile: () => Promise<void>) {}
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (!this.done) {
      this.done = true;
      await this.meanwhile();
    }
    return args.result;
  }
}

interface FacetMigration {
  readonly name: string;
  readonly up: typeof symbolFacets;
  /** The facets it lists the profiles under; the last one's text finds them both. */
  readonly added: string[];
  readonly names: [string, string];
  /** Puts the profiles `ids` back as they were before it (default: without the added facets). */
  readonly asBefore?: (t: TestApp, ids: string[]) => Promise<void>;
}

/** Before 015, a dash was stored as typed (`–`), and listed under its own facets. */
async function dashesAsTyped(t: TestApp, ids: string[]): Promise<void> {
  const typed = sql<string>`replace(search_name, '-', '–')`;
  await t.db
    .updateTable('influencer_profiles')
    .set({ search_name: typed })
    .where('id', 'in', ids)
    .execute();
  await t.db
    .updateTable('influencer_facets')
    .set({ search_name: typed })
    .where('influencer_id', 'in', ids)
    .execute();
  await t.db
    .deleteFrom('influencer_facets')
    .where('influencer_id', 'in', ids)
    .where('facet', 'in', ['s:-', 'p:-'])
    .execute();
}

const migrations: FacetMigration[] = [
  {
    name: '007 symbol facets',
    up: symbolFacets,
    added: ['s:#'],
    names: ['Cats & #dogs', 'More #dolls'],
  },
  {
    name: '011 prefixes after spaces',
    up: prefixesAfterSpaces,
    added: ['p:#', 'p:#d'],
    names: ['Cats & #dogs', 'More #dolls'],
  },
  {
    name: '012 prefixes after apostrophes',
    up: prefixesAfterApostrophes,
    added: ['p:q', 'p:qu'],
    names: ["Zed O'Quill", 'Ann O’Quinn'],
  },
  {
    name: '015 look-alikes folded',
    up: lookAlikesFolded,
    added: ['s:-', 'p:-'],
    names: ['Ada – Live', 'Bo — Sings'],
    asBefore: dashesAsTyped,
  },
];

async function asBefore(t: TestApp, migration: FacetMigration, ids: string[]): Promise<void> {
  if (migration.asBefore !== undefined) return migration.asBefore(t, ids);
  await t.db
    .deleteFrom('influencer_facets')
    .where('influencer_id', 'in', ids)
    .where('facet', 'in', migration.added)
    .execute();
}

/** Runs `migration` in a transaction, as the Migrator does, with `meanwhile` after its first query. */
async function runWhile(
  t: TestApp,
  migration: typeof symbolFacets,
  meanwhile: () => Promise<void>,
) {
  await t.db.transaction().execute(async (trx) => {
    const watched = trx.withPlugin(new AfterFirstQuery(meanwhile));
    await migration(watched as unknown as Kysely<unknown>);
  });
}

/**
 * Long enough for a write to commit, unless the migration keeps it waiting; and longer than
 * PostgreSQL's deadlock_timeout (1 s), so a write waiting on the migration has looked for a
 * deadlock before the migration goes on: a cycle the migration then closes is found by the
 * migration, which is aborted (as at a deploy), not by the write, which would be retried.
 */
const settledOrWaiting = (write: Promise<unknown>) =>
  Promise.race([write, new Promise((resolve) => setTimeout(resolve, 2_000))]);

describe.skipIf(postgres === undefined)('facet migrations racing a follow (postgres)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(postgres!);
  });
  afterAll(() => t.close());

  it.each(migrations)(
    '$name: the added rows count the follow; the directory pages to its end',
    async (migration) => {
      const { up, added, names } = migration;
      const followed = await creator(t, { display_name: names[0] });
      const other = await creator(t, { display_name: names[1] });
      const ids = [followed.id, other.id];
      await asBefore(t, migration, ids);
      const fan = await confirmedAccount(t);
      let follow: Promise<number> | undefined;
      await runWhile(t, up, async () => {
        follow = t
          .call('PUT', `/api/influencers/${followed.id}/follow`, { token: fan.accessToken })
          .then((response) => response.statusCode);
        await settledOrWaiting(follow);
      });
      expect(await follow).toBe(200);

      const copies = await t.db
        .selectFrom('influencer_facets')
        .select(['facet', 'followers_count'])
        .where('influencer_id', '=', followed.id)
        .execute();
      expect(copies.filter((row) => row.followers_count !== 1)).toEqual([]);
      const facet = added.at(-1)!.slice(2);
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 4 && (page === 0 || cursor !== null); page++) {
        const query: URLSearchParams = new URLSearchParams({
          q: facet,
          limit: '1',
          ...(cursor && { cursor }),
        });
        const body: { influencers: { id: string }[]; next_cursor: string | null } = (
          await t.call('GET', `/api/influencers?${query}`)
        ).json();
        seen.push(...body.influencers.map((influencer) => influencer.id));
        cursor = body.next_cursor;
      }
      expect(seen.filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
      expect(new Set(seen).size).toBe(seen.length);
    },
  );

  it.each(migrations)(
    '$name: an account deletion meanwhile (it locks the profile row first) waits, no deadlock',
    async (migration) => {
      const { up, names } = migration;
      const leaving = await creator(t, { display_name: names[0] });
      await asBefore(t, migration, [leaving.id]);
      let deletion: Promise<number> | undefined;
      await runWhile(t, up, async () => {
        deletion = t
          .call('DELETE', '/api/profile', {
            token: leaving.account.accessToken,
            body: { password: STRONG_PASSWORD },
          })
          .then((response) => response.statusCode);
        await settledOrWaiting(deletion);
      });
      expect(await deletion).toBe(200);
      const left = await t.db
        .selectFrom('influencer_facets')
        .select('facet')
        .where('influencer_id', '=', leaving.id)
        .execute();
      expect(left).toEqual([]);
    },
  );
});
