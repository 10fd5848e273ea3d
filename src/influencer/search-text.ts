/**
 * The directory's search text: computed once, when a profile is written, by these functions for
 * both databases, and applied to the query the same way, so the databases only ever compare
 * folded strings byte for byte (no collation, no database-side lower()).
 */

/** Combining diacritical marks (U+0300–U+036F): the accents of Latin, Greek and Cyrillic letters. */
const DIACRITICS = /[\u0300-\u036f]/g;

/**
 * What looks alike and is typed either way: variation selectors go (`❤️` from a phone's emoji
 * keyboard is `❤`), typographic apostrophes and dashes are the ASCII ones (`O’Neil` from a phone's
 * smart punctuation finds `O'Neil`), and Latin letters that are not a letter plus an accent, so
 * that NFD leaves alone, are their base letters (`søren` finds `Søren` as `jose` finds `José`).
 */
const LOOK_ALIKES: Record<string, string> = {
  '\u2018': "'",
  '\u2019': "'",
  '\u201b': "'",
  '\u02bc': "'",
  '\u2032': "'",
  '\u2010': '-',
  '\u2012': '-',
  '\u2013': '-',
  '\u2014': '-',
  '\u2015': '-',
  '\u2212': '-',
  ø: 'o',
  ł: 'l',
  đ: 'd',
  ħ: 'h',
  ŧ: 't',
  æ: 'ae',
  œ: 'oe',
};
const LOOK_ALIKE = new RegExp(`[${Object.keys(LOOK_ALIKES).join('')}]`, 'gu');
const VARIATION_SELECTORS = /[\ufe00-\ufe0f]/gu;

/**
 * Folds text for matching: compatibility forms unified (NFKC: `ﬁ` → `fi`, full-width → ASCII),
 * full case folding (`É` → `é`, `ß`/`ẞ`/`SS` → `ss`, final `ς` → `σ`), look-alikes made one
 * (LOOK_ALIKES), then accents removed (`é` → `e`, `Σοφία` → `σοφια`). Lower → upper → lower
 * approximates Unicode full case folding with what JavaScript has: the upper step expands `ß` to
 * `SS`, the first lower step catches capitals whose upper case is themselves (`ẞ`). Idempotent:
 * fold(fold(x)) === fold(x). Stored with every profile: a change here needs a migration (015).
 */
export function foldSearchText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .toUpperCase()
    .toLowerCase()
    .replace(/ς/g, 'σ')
    .replace(VARIATION_SELECTORS, '')
    .normalize('NFD')
    .replace(DIACRITICS, '')
    .replace(LOOK_ALIKE, (c) => LOOK_ALIKES[c] ?? c) // after: `ǿ` is `ø` once its accent went
    .normalize('NFC');
}

/**
 * Queries of at most this many characters match word starts; longer ones, anywhere. The stored
 * prefixes (prefixTokens) are this many code points of folded text.
 */
export const PREFIX_QUERY_MAX = 2;

const words = new Intl.Segmenter('und', { granularity: 'word' });

/**
 * Inside a word of UAX #29, a letter after one of these starts a word to the person reading it
 * (`l’école`, `o'neil`, `ada.lovelace`, `foo:bar`, `mary·jane`), though UAX #29 joins them (its
 * MidLetter and MidNumLet). `_` (and a digit after `.`: `3.14`) still joins.
 */
const JOINED_WORD = /['’.:·](?=\p{L})/gu;

/**
 * Where the words of `folded` start: Unicode word boundaries (UAX #29, dictionary-based for CJK),
 * every letter after an apostrophe, period, colon or middle dot (JOINED_WORD), and every start
 * after white space, where UAX #29 sees no word (`#music`, `@ada`, `🔥`): to the person typing
 * them, those are words of the name too.
 */
function wordStarts(folded: string): number[] {
  const starts = [0];
  for (const { index, segment, isWordLike } of words.segment(folded)) {
    if (isWordLike)
      for (const joined of segment.matchAll(JOINED_WORD)) starts.push(index + joined.index + 1);
    if (index === 0 || /\s/u.test(folded[index] ?? '')) continue;
    if (isWordLike || /\s/u.test(folded[index - 1] ?? '')) starts.push(index);
  }
  return starts;
}

/** The 1- and 2-code-point prefixes of `text` (fewer when it is shorter). */
function shortPrefixes(text: string): string[] {
  const points = Array.from(text.slice(0, 4)); // 2 code points take at most 4 UTF-16 units
  return points.slice(0, PREFIX_QUERY_MAX).map((_, i) => points.slice(0, i + 1).join(''));
}

/**
 * Every short query that finds this profile: the 1- and 2-character prefixes of the handle, of
 * the display name and of each word of the display name, folded. Stored one row each, they turn
 * a short query into an index lookup.
 */
export function prefixTokens(handle: string, searchName: string): string[] {
  const tokens = new Set(shortPrefixes(handle));
  for (const start of wordStarts(searchName)) {
    for (const token of shortPrefixes(searchName.slice(start))) tokens.add(token);
  }
  // A query is trimmed, so a token ending in a space could never be asked for.
  return [...tokens].filter((token) => !/\s$/u.test(token));
}

/**
 * Whether the handle or a word of the folded display name starts with `folded`: what a short
 * query asks for, checked on rows when its folded form is longer than the stored prefixes (`æs`
 * is `aes`).
 */
export function startsAWord(
  profile: { readonly handle: string; readonly search_name: string },
  folded: string,
): boolean {
  if (profile.handle.startsWith(folded)) return true;
  const name = profile.search_name;
  return wordStarts(name).some((start) => name.startsWith(folded, start));
}

/** `text` as a LIKE pattern matching itself anywhere: `%`, `_` and `\` are literal (ESCAPE '\'). */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** `text` as an FTS5 phrase: matched literally, wherever it occurs (trigram tokenizer). */
export function ftsPhrase(text: string): string {
  return `"${text.replace(/"/g, '""')}"`;
}

/** A character that is neither a letter, a mark, a digit nor a space (see symbolsOf). */
const SYMBOL = /[^\p{L}\p{M}\p{N}\s]/u;
const SYMBOLS = new RegExp(SYMBOL.source, 'gu');
const WORD_CHARACTER = /[\p{L}\p{M}\p{N}]/u;

/**
 * The distinct symbols of `text`: characters that are neither letters, marks, digits nor spaces
 * (`.`, `-`, `_`, `🔥`). PostgreSQL's trigram index sees letters and digits only, so a query made
 * of symbols alone (`...`, `🔥🔥🔥`) has no trigram to look up there and would read the whole
 * index; a profile containing such a query has each of its symbols, so one symbol's facet holds
 * every match (symbolFacets).
 */
export function symbolsOf(text: string): string[] {
  return [...new Set(text.match(SYMBOLS))];
}

/** Whether a folded query has symbols, and spaces at most besides: no letter, mark or digit. */
export const isSymbolsOnly = (folded: string): boolean =>
  SYMBOL.test(folded) && !WORD_CHARACTER.test(folded);

/**
 * The symbol facets of a profile: each symbol of its display name, and `_` when the handle has
 * `__` (a handle's only symbol; a query of symbols alone finds a handle only if it is 3 or more
 * underscores, which such a handle then contains).
 */
export function symbolFacets(handle: string, searchName: string): string[] {
  const symbols = new Set(symbolsOf(searchName));
  if (handle.includes('__')) symbols.add('_');
  return [...symbols].map(symbolFacet);
}

/** The facet of every profile: the whole directory. */
export const EVERYONE_FACET = '*';
export const categoryFacet = (category: string) => `c:${category}`;
export const prefixFacet = (token: string) => `p:${token}`;
export const symbolFacet = (symbol: string) => `s:${symbol}`;

/** The directory facets a profile belongs to (one index row each: see migrations 004 and 007). */
export function facetsOf(profile: {
  readonly handle: string;
  readonly search_name: string;
  readonly categories: readonly string[];
}): string[] {
  return [
    EVERYONE_FACET,
    ...profile.categories.map(categoryFacet),
    ...prefixTokens(profile.handle, profile.search_name).map(prefixFacet),
    ...symbolFacets(profile.handle, profile.search_name),
  ];
}
