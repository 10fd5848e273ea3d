import type { Caller } from '../accounts/caller.js';
import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import { splitPage, type Keyset, type Page } from '../http/cursor.js';
import type { Category } from './categories.js';
import { SORT_ORDER, type SortName } from './directory.queries.js';
import {
  pageOfFacet,
  pageOfLongPrefix,
  pageOfSubstring,
  type ListedProfile,
} from './directory.store.js';
import {
  categoryFacet,
  EVERYONE_FACET,
  foldSearchText,
  PREFIX_QUERY_MAX,
  prefixFacet,
} from './search-text.js';
import { influencerViews, type Relations } from './viewer.js';

export interface DirectoryQuery {
  readonly q?: string | undefined;
  readonly category?: Category | undefined;
  readonly sort: SortName;
  readonly page: Page;
}

const QUERY_MAX = 100;

/**
 * The directory (API.md, "Directory rules"): no query walks the category's (or everyone's)
 * index in sort order; a query of 1–2 characters walks the index of that word-start prefix; a
 * longer one walks the category's (or everyone's) index a bounded distance, then goes through
 * the substring index. Every page is keyset-paged by (sort key, id).
 */
export async function searchDirectory(
  ctx: ServiceContext,
  caller: Caller | undefined,
  query: DirectoryQuery,
) {
  const { sort, page, category } = query;
  const { folded, short } = query.q === undefined ? {} : foldQuery(query.q);
  const after = checkedKeyset(sort, page.after);
  // The page's own query also says what is_following and can_message need to know.
  const viewer =
    caller === undefined
      ? undefined
      : { userId: caller.userId, pastPolicy: ctx.pastPolicyCondition };
  const slice = { sort, after, limit: page.limit + 1, viewer };
  const alsoFacet = category === undefined ? undefined : categoryFacet(category);
  let listed: ListedProfile[];
  if (folded === undefined) {
    listed = await pageOfFacet(ctx.db, alsoFacet ?? EVERYONE_FACET, slice);
  } else if (folded === '') {
    listed = []; // the query was only accents: it names nothing
  } else if ([...folded].length <= PREFIX_QUERY_MAX) {
    listed = await pageOfFacet(ctx.db, prefixFacet(folded), { ...slice, alsoFacet });
  } else if (short === true) {
    listed = await pageOfLongPrefix(ctx.db, folded, { ...slice, alsoFacet });
  } else {
    listed = await pageOfSubstring(ctx.db, alsoFacet ?? EVERYONE_FACET, folded, {
      ...slice,
      alsoFacet,
    });
  }
  const { column } = SORT_ORDER[sort];
  const { rows, next } = splitPage(listed, page.limit, ({ profile }) => ({
    value: profile[column],
    id: profile.id,
  }));
  const profiles = rows.map((row) => row.profile);
  return { influencers: await influencerViews(ctx, caller, profiles, relationsOf(rows)), next };
}

/** What the page's rows told about the caller's relations to them (viewer.ts `Relations`). */
function relationsOf(rows: readonly ListedProfile[]): Relations {
  const having = (flag: (row: ListedProfile) => boolean) =>
    new Set(rows.filter(flag).map((row) => row.profile.id));
  return {
    follows: having((row) => row.followed),
    blocked: having((row) => row.blocked),
    pastPolicy: having((row) => row.pastPolicy),
  };
}

/**
 * `q`: 1–100 code points after trimming, no control characters but white space; folded like the
 * stored text. A tab or line break (a name pasted from elsewhere) is a space: names have none.
 * `short`: 1–2 characters as typed (NFC: an accent typed apart is one with its letter), which
 * match word starts however long their folding (`æs` is `aes`).
 */
function foldQuery(raw: string): { folded: string; short: boolean } {
  const q = raw.replace(/[\t\n\v\f\r]+/g, ' ').trim();
  const length = [...q].length;
  if (length === 0 || length > QUERY_MAX)
    throw Errors.validationFailed([
      { field: 'q', message: `must be 1–${QUERY_MAX} characters after trimming` },
    ]);
  if (/[\p{Cc}\p{Cs}]/u.test(q))
    throw Errors.validationFailed([{ field: 'q', message: 'must not contain control characters' }]);
  return { folded: foldSearchText(q), short: [...q.normalize('NFC')].length <= PREFIX_QUERY_MAX };
}

/** A cursor's sort value has the sort's type (it was signed with it; checked all the same). */
function checkedKeyset(sort: SortName, after: Keyset | undefined): Keyset | undefined {
  if (after === undefined) return undefined;
  const expected = sort === 'name' ? 'string' : 'number';
  if (typeof after.value !== expected) throw Errors.invalidCursor();
  return after;
}
