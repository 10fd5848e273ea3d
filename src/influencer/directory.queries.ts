import { sql, type Expression, type Kysely, type SqlBool } from 'kysely';
import { blockExists } from '../blocks/blocks.store.js';
import type { PastPolicyCondition } from '../context.js';
import { isPostgres } from '../db/dialect.js';
import type { Database } from '../db/tables.js';
import type { Keyset } from '../http/cursor.js';
import { PROFILE_COLUMNS } from './profiles.store.js';
import { followExists } from './follows.store.js';
import { containsPattern, ftsPhrase } from './search-text.js';

/**
 * The directory's SQL (directory.store.ts runs it): one query per way of finding a page. Every
 * query binds its values in a fixed order, which directory.store.ts repeats to reuse it compiled.
 * Row limits are literals, not parameters: PostgreSQL costs a generic plan with `limit $n` as if
 * it read a tenth of the facet, so it planned every run of these prepared statements afresh
 * (0 generic plans in pg_prepared_statements; planning cost more than running the query).
 */

type Executor = Kysely<Database>;

/** Each sort: the column it orders by (on profiles and on facets alike) and its direction. */
export const SORT_ORDER = {
  popular: { column: 'followers_count', direction: 'desc', type: 'integer' },
  newest: { column: 'created_at', direction: 'desc', type: 'bigint' },
  name: { column: 'search_name', direction: 'asc', type: 'text' },
} as const;

/**
 * A bound value the PostgreSQL planner does not look at (an InitPlan: still an index condition).
 * With the facet and the keyset's values in view, it found each custom plan cheaper than the
 * prepared statement's generic one (a big facet, a keyset near its start) and so planned every
 * page afresh, which cost more than running it; the plan is the same walk whatever the values.
 */
function unplanned(db: Executor, value: unknown, type: string): Expression<unknown> {
  return isPostgres(db) ? sql`(select cast(${value} as ${sql.raw(type)}))` : sql`${value}`;
}

/** The facet a walk goes down: `f.facet = …`, the value unplanned. */
const facetIs = (db: Executor, facet: string) =>
  sql<SqlBool>`f.facet = ${unplanned(db, facet, 'text')}`;

export type SortName = keyof typeof SORT_ORDER;

export interface Slice {
  readonly sort: SortName;
  readonly after: Keyset | undefined;
  /** The rows to return: written into the SQL text (directory.store.ts keeps these few). */
  readonly limit: number;
  /** A facet the profile must also have (a category, when another facet drives the walk). */
  readonly alsoFacet?: string | undefined;
  /** Who is looking: each row then says what `can_message` and `is_following` need (viewing). */
  readonly viewer?: Viewing | undefined;
  /** A text the handle or search name must contain, checked on each row the walk reads. */
  readonly contains?: string | undefined;
}

/** The caller looking at a page, and the Chat group's condition for a conversation past DM policy. */
export interface Viewing {
  readonly userId: string;
  readonly pastPolicy: PastPolicyCondition;
}

/**
 * A substring query first walks the listing's own index for at most this many rows per row
 * asked for: when the text is common, that finds the page (in order, without sorting); when it
 * is rarer, the substring index finds every match and they are sorted, which is then cheap.
 */
const WALK_ROWS_PER_RESULT = 50;

const P_COLUMNS = PROFILE_COLUMNS.map((c) => `p.${c}` as const);

/**
 * What the viewer's page needs to know about each of its rows, in the page's own query rather than
 * three more round trips: whether the viewer follows the profile, whether a block stands between
 * them (either way), and whether they have a conversation past DM policy. Each is a probe of a
 * primary or unique key, made only for the rows the page returns, and only when the viewer has
 * any follows (blocks) at all: a question the query asks once, not per row. Every column binds
 * the viewer's id, before the FROM clause (directory.store.ts counts them: viewerBindings).
 */
export function viewerColumns(db: Executor, viewing: Viewing, profileId: Expression<string>) {
  const me = sql<string>`${viewing.userId}`;
  const followsAny = sql<SqlBool>`exists (select 1 from follows va where va.follower_id = ${me})`;
  const blocksAny = sql<SqlBool>`(exists (select 1 from blocks ba where ba.blocker_id = ${me})
    or exists (select 1 from blocks bb where bb.blocked_id = ${me}))`;
  const follows = sql<SqlBool>`exists ${followExists(db, me, profileId)}`;
  const blocked = sql<SqlBool>`(exists ${blockExists(db, me, profileId)} or exists ${blockExists(db, profileId, me)})`;
  return [
    onlyIf(followsAny, follows).as('followed'),
    onlyIf(blocksAny, blocked).as('blocked'),
    sql<boolean>`${viewing.pastPolicy(me, profileId)}`.as('past_policy'),
  ];
}

/**
 * `probe`, asked only when `guard` (a condition that does not depend on the row, so both
 * databases evaluate it once per query) holds: otherwise false without a probe per row.
 */
function onlyIf(guard: Expression<SqlBool>, probe: Expression<SqlBool>) {
  return sql<boolean>`case when ${guard} then ${probe} else false end`;
}

/**
 * A walk down `facet`'s index for the slice's sort, which stops after `limit` rows (that contain
 * `slice.contains`, if given: the walk then reads the facet up to its end if it must).
 */
export function facetPageQuery(db: Executor, facet: string, slice: Slice) {
  const { column, direction } = SORT_ORDER[slice.sort];
  const { contains } = slice;
  return db
    .selectFrom('influencer_facets as f')
    .innerJoin('influencer_profiles as p', 'p.id', 'f.influencer_id')
    .select(P_COLUMNS)
    .$if(slice.viewer !== undefined, (q) =>
      q.select(viewerColumns(db, slice.viewer as Viewing, sql.ref('p.id'))),
    )
    .where(facetIs(db, facet))
    .$if(contains !== undefined, (q) => q.where(containsLiterally(db, 'f', contains as string)))
    .where((eb) => eb.and(sliceConditions(db, 'f', 'influencer_id', slice)))
    .orderBy(`f.${column}`, direction)
    .orderBy('f.influencer_id', direction)
    .limit(sql.lit(slice.limit));
}

/**
 * The first `WALK_ROWS_PER_RESULT * limit` rows of `facet` in sort order, those containing
 * `folded`: a complete page if it finds `limit` of them. `slice.alsoFacet` is not applied: the
 * caller walks the category's own facet.
 */
export function walkPageQuery(db: Executor, facet: string, folded: string, slice: Slice) {
  const { column, direction } = SORT_ORDER[slice.sort];
  const walk = db
    .selectFrom('influencer_facets as f')
    // Only what the facet's sort index carries: the walk never reads the table.
    .select([...new Set(['f.influencer_id', `f.${column}`, 'f.search_name', 'f.handle'] as const)])
    .where(facetIs(db, facet))
    .where((eb) =>
      eb.and(sliceConditions(db, 'f', 'influencer_id', { ...slice, alsoFacet: undefined })),
    )
    .orderBy(`f.${column}`, direction)
    .orderBy('f.influencer_id', direction)
    .limit(sql.lit(WALK_ROWS_PER_RESULT * slice.limit));
  return db
    .selectFrom(walk.as('w'))
    .innerJoin('influencer_profiles as p', 'p.id', 'w.influencer_id')
    .select(P_COLUMNS)
    .$if(slice.viewer !== undefined, (q) =>
      q.select(viewerColumns(db, slice.viewer as Viewing, sql.ref('p.id'))),
    )
    .where(containsLiterally(db, 'w', folded))
    .orderBy(`w.${column}`, direction)
    .orderBy('w.influencer_id', direction)
    .limit(sql.lit(slice.limit));
}

/**
 * Every profile containing `folded`, through the substring index, sorted: grows with the matches.
 * The viewer's columns come after the sort, for the page's rows only, not for every match.
 */
export function substringPageQuery(db: Executor, folded: string, slice: Slice) {
  const { column, direction } = SORT_ORDER[slice.sort];
  const page = db
    .selectFrom('influencer_profiles as p')
    .select(P_COLUMNS)
    .where((eb) => eb.and([matchesIndexed(db, folded), ...sliceConditions(db, 'p', 'id', slice)]))
    .orderBy(`p.${column}`, direction)
    .orderBy('p.id', direction)
    .limit(sql.lit(slice.limit));
  if (slice.viewer === undefined) return page;
  return db
    .selectFrom(page.as('p'))
    .selectAll('p')
    .select(viewerColumns(db, slice.viewer, sql.ref('p.id')))
    .orderBy(`p.${column}`, direction)
    .orderBy('p.id', direction);
}

/** The slice's "also in this facet" and "after this row" conditions, on table `alias`. */
function sliceConditions(
  db: Executor,
  alias: 'f' | 'p',
  idColumn: string,
  slice: Slice,
): Expression<SqlBool>[] {
  const { column, direction, type } = SORT_ORDER[slice.sort];
  const id = `${alias}.${idColumn}`;
  const conditions: Expression<SqlBool>[] = [];
  if (slice.alsoFacet !== undefined) conditions.push(hasFacet(sql.ref(id), slice.alsoFacet));
  if (slice.after !== undefined)
    conditions.push(afterRow(db, [`${alias}.${column}`, id], direction, slice.after, type));
  return conditions;
}

/** "After this row" (src/db/keyset.ts), its values unplanned: one seek into the list's index. */
function afterRow(
  db: Executor,
  [sortColumn, idColumn]: [string, string],
  direction: 'asc' | 'desc',
  after: Keyset,
  type: string,
): Expression<SqlBool> {
  const operator = sql.raw(direction === 'desc' ? '<' : '>');
  const value = unplanned(db, after.value, type);
  return sql<SqlBool>`(${sql.ref(sortColumn)}, ${sql.ref(idColumn)}) ${operator} (${value}, ${unplanned(db, after.id, 'text')})`;
}

function hasFacet(influencerId: Expression<unknown>, facet: string): Expression<SqlBool> {
  return sql<SqlBool>`exists (select 1 from influencer_facets c where c.influencer_id = ${influencerId} and c.facet = ${facet})`;
}

/** `folded` within the handle or search name of `alias`'s row, compared as plain text. */
function containsLiterally(db: Executor, alias: string, folded: string): Expression<SqlBool> {
  const position = sql.raw(isPostgres(db) ? 'strpos' : 'instr');
  const handle = sql.ref(`${alias}.handle`);
  const name = sql.ref(`${alias}.search_name`);
  return sql<SqlBool>`(${position}(${name}, ${folded}) > 0 or ${position}(${handle}, ${folded}) > 0)`;
}

/** `folded` within the handle or search name of profile `p`, in a form the substring index serves. */
function matchesIndexed(db: Executor, folded: string): Expression<SqlBool> {
  if (isPostgres(db)) {
    // Unplanned too: whatever the text, the plan is the same two bitmap index scans and a sort.
    const pattern = () => unplanned(db, containsPattern(folded), 'text');
    return sql<SqlBool>`(p.handle like ${pattern()} escape '\\' or p.search_name like ${pattern()} escape '\\')`;
  }
  return sql<SqlBool>`p.doc_id in (select rowid from influencer_search where influencer_search match ${ftsPhrase(folded)})`;
}
