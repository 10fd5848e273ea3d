import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../db/dialect.js';
import { reusableQuery, reusableShapedQuery } from '../db/reusable-query.js';
import { LeastRecentlyUsed } from '../least-recently-used.js';
import type { Database } from '../db/tables.js';
import {
  facetPageQuery,
  substringPageQuery,
  viewerColumns,
  walkPageQuery,
  type Slice,
  type Viewing,
} from './directory.queries.js';
import { toProfile, type Profile } from './profiles.store.js';
import {
  containsPattern,
  ftsPhrase,
  isSymbolsOnly,
  PREFIX_QUERY_MAX,
  prefixFacet,
  startsAWord,
  symbolFacet,
  symbolsOf,
} from './search-text.js';
import { SORT_ORDER } from './directory.queries.js';

type Executor = Kysely<Database>;

/** A profile on a directory page, and what the slice's viewer (if any) needs to know about it. */
export interface ListedProfile {
  readonly profile: Profile;
  /** The viewer follows the profile. */
  readonly followed: boolean;
  /** A block stands between the viewer and the profile, either way. */
  readonly blocked: boolean;
  /** The viewer and the profile have a conversation that DM policy no longer binds. */
  readonly pastPolicy: boolean;
}

// Each query compiled once per shape: for a page of 20, Kysely's builder cost as much as the
// database's own work (bench/README.md).
const facetPages = reusableShapedQuery(facetPageQuery);
const walkPages = reusableShapedQuery(walkPageQuery);
const substringPages = reusableShapedQuery(substringPageQuery);

/**
 * The row counts the SQL asks for: `limit + 1` rounded up to one of these, so that each query has
 * a few SQL texts (the count is a literal: directory.queries.ts) and PostgreSQL a few prepared
 * statements per connection, whatever limits clients send. The extra rows are dropped.
 */
const FETCHED_ROWS = [6, 11, 21, 51, 101];

/** The slice as the SQL asks for it: at least `slice.limit` rows, one of FETCHED_ROWS. */
const sized = (slice: Slice): Slice => ({
  ...slice,
  limit: FETCHED_ROWS.find((rows) => rows >= slice.limit) ?? slice.limit,
});

/**
 * One page of the profiles under `facet`, in `slice.sort` order after `slice.after`: a walk down
 * the facet's index for that sort (influencer_facets_popular/_newest/_name), which stops after
 * `limit` rows, however many profiles the facet has. With `slice.alsoFacet` (a prefix within a
 * category), the smaller of the two facets is walked and the other checked on each row: walking
 * a large prefix for a small category would probe every profile of the prefix.
 */
export async function pageOfFacet(db: Executor, facet: string, slice: Slice) {
  const [walked, alsoFacet] =
    slice.alsoFacet === undefined
      ? [facet, undefined]
      : await smallerFirst(db, facet, slice.alsoFacet);
  const query = sized({ ...slice, alsoFacet });
  const contains = query.contains === undefined ? [] : [query.contains, query.contains];
  const parameters = [
    ...viewerParameters(db, slice),
    walked,
    ...contains,
    ...sliceParameters(query),
  ];
  return listed(await facetPages(db, shapeOf(query), parameters, walked, query), slice.limit);
}

/**
 * One page of the profiles of which the handle or a word of the display name starts with
 * `folded`, a short query whose folding is longer than the stored prefixes (`æs` is `aes`,
 * `ß` + a letter three): the facet of its first stored-length prefix, only rows containing it, each
 * checked for a word start. The SQL reads that facet to its end if it must; a page whose rows
 * all contain it mid-word only asks again after its last row.
 */
export async function pageOfLongPrefix(
  db: Executor,
  folded: string,
  slice: Slice,
): Promise<ListedProfile[]> {
  const facet = prefixFacet(Array.from(folded).slice(0, PREFIX_QUERY_MAX).join(''));
  const { column } = SORT_ORDER[slice.sort];
  const found: ListedProfile[] = [];
  for (let after = slice.after; ;) {
    const rows = await pageOfFacet(db, facet, { ...slice, after, contains: folded });
    found.push(...rows.filter(({ profile }) => startsAWord(profile, folded)));
    const last = rows.at(-1)?.profile;
    if (found.length >= slice.limit || rows.length < slice.limit || last === undefined)
      return found.slice(0, slice.limit);
    after = { value: last[column], id: last.id };
  }
}

/** Facets are counted up to this many profiles: enough to tell a small one from a large one. */
const FACET_SIZE_CAP = 5_000;

const countFacet = reusableQuery((db: Executor, facet: string, cap: number) =>
  db
    .selectFrom(
      sql<{
        one: number;
      }>`(select 1 as one from influencer_facets where facet = ${facet} limit ${cap})`.as('m'),
    )
    .select((eb) => eb.fn.countAll<number>().as('n')),
);

/** How many profiles `facet` has, up to FACET_SIZE_CAP; remembered for a minute (facetSizes). */
async function facetSize(db: Executor, facet: string): Promise<number> {
  const known = facetSizes.recall(db, facet);
  if (known !== undefined) return known;
  const [row] = await countFacet(db, facet, FACET_SIZE_CAP);
  const size = Number(row?.n ?? 0);
  facetSizes.remember(db, facet, size);
  return size;
}

/** The two facets, the one with fewer profiles first (the first one when both are large). */
async function smallerFirst(db: Executor, facet: string, other: string) {
  const [size, otherSize] = await Promise.all([facetSize(db, facet), facetSize(db, other)]);
  return otherSize < size ? [other, facet] : [facet, other];
}

/**
 * One page of the profiles under `facet` whose handle or folded display name contains `folded`
 * (3+ code points): a bounded walk of the facet's index first, then, if that did not fill the
 * page, the substring index (PostgreSQL: pg_trgm GIN; SQLite: FTS5 trigram) and a sort. A text
 * known to be rare goes to the substring index at once.
 */
export async function pageOfSubstring(
  db: Executor,
  facet: string,
  folded: string,
  slice: Slice,
): Promise<ListedProfile[]> {
  if (isPostgres(db) && isSymbolsOnly(folded)) return pageOfSymbols(db, folded, slice);
  const viewer = viewerParameters(db, slice);
  const query = sized(slice);
  if (await walkFirst(db, facet, folded, slice)) {
    const walk = [facet, ...sliceParameters({ ...slice, alsoFacet: undefined })];
    const parameters = [...viewer, ...walk, folded, folded];
    const walked = await walkPages(db, shapeOf(query), parameters, facet, folded, query);
    if (walked.length >= slice.limit) return listed(walked, slice.limit);
    rememberWalkMiss(db, facet, folded, slice);
  }
  const match = isPostgres(db)
    ? [containsPattern(folded), containsPattern(folded)]
    : [ftsPhrase(folded)];
  const parameters = [...viewer, ...match, ...sliceParameters(slice)];
  return listed(await substringPages(db, shapeOf(query), parameters, folded, query), slice.limit);
}

/** The most symbols of one query whose facets are weighed against each other. */
const SYMBOLS_WEIGHED = 4;

/**
 * PostgreSQL, a query of symbols alone (`...`, `🔥🔥🔥`): pg_trgm has no trigram to look it up by
 * and would read its whole index (70 ms at 100,000 profiles). Every match has each of the query's
 * symbols, so the smallest of their facets is walked instead, in sort order, each row checked.
 * SQLite's trigram table indexes every character and needs none of this.
 */
async function pageOfSymbols(db: Executor, folded: string, slice: Slice) {
  const facets = symbolsOf(folded).slice(0, SYMBOLS_WEIGHED).map(symbolFacet);
  const sizes = await Promise.all(facets.map((facet) => facetSize(db, facet)));
  const smallest = facets[sizes.indexOf(Math.min(...sizes))] as string;
  return pageOfFacet(db, smallest, { ...slice, contains: folded });
}

/** What decides a directory query's SQL text: its sort, row count, and which optional parts it has. */
function shapeOf({ sort, limit, alsoFacet, after, viewer, contains }: Slice): string {
  const optional = [alsoFacet, after, viewer, contains].map((part) => part !== undefined);
  return [sort, limit, ...optional].join(':');
}

/** The viewer's id, bound first, once for each use in the viewer's columns (before the FROM clause). */
function viewerParameters(db: Executor, { viewer }: Slice): string[] {
  if (viewer === undefined) return [];
  return new Array<string>(viewerBindings(db, viewer)).fill(viewer.userId);
}

/** How many parameters the viewer's columns bind (the same for every viewer): counted once. */
const bindingCounts = new WeakMap<Viewing['pastPolicy'], number>();

function viewerBindings(db: Executor, viewing: Viewing): number {
  let count = bindingCounts.get(viewing.pastPolicy);
  if (count === undefined) {
    const columns = viewerColumns(db, viewing, sql.ref('p.id'));
    count = db.selectNoFrom(columns).compile().parameters.length;
    bindingCounts.set(viewing.pastPolicy, count);
  }
  return count;
}

/** The values of the slice's conditions (the also-facet, then the keyset), in their order. */
function sliceParameters({ alsoFacet, after }: Slice): unknown[] {
  return [
    ...(alsoFacet === undefined ? [] : [alsoFacet]),
    ...(after === undefined ? [] : [after.value, after.id]),
  ];
}

type Flag = boolean | number | undefined;
type Row = Parameters<typeof toProfile>[0] & {
  readonly followed?: Flag;
  readonly blocked?: Flag;
  readonly past_policy?: Flag;
};

/** The first `limit` rows as profiles (SQLite answers `exists` with 0 or 1). */
const listed = (rows: readonly Row[], limit: number): ListedProfile[] =>
  rows.slice(0, limit).map((row) => ({
    profile: toProfile(row),
    followed: Boolean(row.followed),
    blocked: Boolean(row.blocked),
    pastPolicy: Boolean(row.past_policy),
  }));

/**
 * Below this many matches per row asked for, in the whole directory, sorting them all costs less
 * than the bounded walk (WALK_ROWS_PER_RESULT rows per row asked for), which would not fill the
 * page anyway: a search for one creator's name or handle.
 */
const RARE_MATCHES_PER_RESULT = 5;

const countMatches = reusableQuery((db: Executor, phrase: string, cap: number) =>
  db
    .selectFrom(
      sql<{
        one: number;
      }>`(select 1 as one from influencer_search where influencer_search match ${phrase} limit ${cap})`.as(
        'm',
      ),
    )
    .select((eb) => eb.fn.countAll<number>().as('n')),
);

/**
 * Whether a substring search tries the bounded walk first: not when the walk of this first page
 * came back short a moment ago (it would again: one wasted query), nor, on SQLite, when the text
 * is rare.
 */
async function walkFirst(db: Executor, facet: string, folded: string, slice: Slice) {
  if (slice.after === undefined && walkMisses.recall(db, missKey(facet, folded, slice)) === true)
    return false;
  return !(await isRare(db, folded, slice.limit));
}

/**
 * A first page's walk that did not fill the page: remembered (later pages start deeper in the
 * walk, so theirs says nothing about the first).
 */
function rememberWalkMiss(db: Executor, facet: string, folded: string, slice: Slice): void {
  if (slice.after === undefined) walkMisses.remember(db, missKey(facet, folded, slice), true);
}

const missKey = (facet: string, folded: string, { sort, limit }: Slice) =>
  `${facet}:${sort}:${limit}:${folded}`;

/**
 * SQLite: whether so few profiles contain `folded` that the substring index should answer at once,
 * counted in the FTS5 table up to the threshold only. PostgreSQL's GIN index finds every match at
 * once, which for a common text costs more than the walk: there the walk goes first, unless it
 * came back short for the same first page a moment ago (walkMisses).
 */
async function isRare(db: Executor, folded: string, limit: number): Promise<boolean> {
  if (isPostgres(db)) return false;
  const key = `${limit}:${folded}`;
  const known = rarity.recall(db, key);
  if (known !== undefined) return known;
  const threshold = RARE_MATCHES_PER_RESULT * limit;
  const [row] = await countMatches(db, ftsPhrase(folded), threshold);
  const rare = Number(row?.n ?? 0) < threshold;
  rarity.remember(db, key, rare);
  return rare;
}

/**
 * Whether a text is rare (or a first page's walk came back short), and how large a facet is,
 * change only as profiles come and go, and asking costs a query on every search: remembered per
 * database for a minute, for the last 1,000 keys. A stale answer costs time, never results: a walk
 * that does not fill the page falls back to the substring index, the index alone answers every
 * text correctly, and either facet of a prefix within a category can be walked.
 */
class DirectoryFacts<T> {
  private readonly byDatabase = new WeakMap<
    Executor,
    LeastRecentlyUsed<string, { value: T; until: number }>
  >();

  constructor(
    private readonly ttlMs: number,
    private readonly maxKeys: number,
  ) {}

  recall(db: Executor, key: string): T | undefined {
    const entry = this.byDatabase.get(db)?.peek(key);
    return entry !== undefined && entry.until > Date.now() ? entry.value : undefined;
  }

  remember(db: Executor, key: string, value: T): void {
    let facts = this.byDatabase.get(db);
    if (facts === undefined) this.byDatabase.set(db, (facts = new LeastRecentlyUsed(this.maxKeys)));
    facts.set(key, { value, until: Date.now() + this.ttlMs });
  }
}

const rarity = new DirectoryFacts<boolean>(60_000, 1_000);
const walkMisses = new DirectoryFacts<boolean>(60_000, 1_000);
const facetSizes = new DirectoryFacts<number>(60_000, 1_000);
