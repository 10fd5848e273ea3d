/* global fetch */
// The directory scenarios (issue 9): 100,000 influencer profiles seeded straight into the service's
// database by the tests' own seeder (test/influencer/seed.ts `seedDirectory`, loaded through tsx:
// it builds every row with the service's newProfile, facetsOf and insertProfiles), ANALYZEd as
// a live database would be, then four kinds of directory read, each rotating over a fixed list.
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { URL, URLSearchParams } from 'node:url';
import { register } from 'tsx/esm/api';

export const DIRECTORY_SIZE = 100_000;
export const DIRECTORY_CONNECTIONS = 10;
/** The page that `page20` asks for, reached by following next_cursor from the first. */
const CURSOR_PAGE = 20;

/**
 * Loads a TypeScript module of the repository (src/ or test/) through tsx, registered once for
 * the process rather than per import (tsImport), so that every module shares one Kysely: the
 * store tells the databases apart with `instanceof`.
 */
let tsx;
export const source = (path) => {
  tsx ??= register();
  return import(new URL(path, import.meta.url).href);
};

/**
 * Substrings (3+ characters) people type: parts of common names, in several scripts. Each matches
 * a few percent of the directory, so the bounded walk of the popular index fills the page.
 */
export const COMMON_SUBSTRINGS = ['mar', 'garc', 'ller', 'иван', 'σοφ', 'nguy', 'lope', 'sson'];
/**
 * Rare texts are typed once, not by everyone: more of them than the service remembers facts of
 * (1,000 texts a minute, src/influencer/directory.store.ts), so the scenario, rotating through
 * them in order, never finds one remembered, and pays what a text seen for the first time costs.
 * Common substrings, prefixes and categories repeat, as popular searches do.
 */
const RARE_TEXTS = 1_500;
/** Word-start prefixes (1–2 characters: the prefix facets). */
export const PREFIXES = ['ma', 'jo', 'ив', 'σο', 'mu', 'li', 'ko', 'no', 'ch', 'th'];
const CATEGORIES = ['music', 'gaming', 'food', 'travel', 'tech', 'beauty', 'sports', 'art'];

/**
 * The listings whose 20th page `page20` reads: categories by popularity, everyone by newest and
 * by name, and a prefix search.
 */
const CURSOR_LISTINGS = [
  ...CATEGORIES.slice(0, 4).map((category) => ({ category, sort: 'popular' })),
  { sort: 'newest' },
  { sort: 'name' },
  { q: 'ma', sort: 'popular' },
];

/** @param {Record<string, string | undefined>} params */
export const directoryPath = (params) => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params))
    if (value !== undefined) search.set(key, value);
  return `/api/influencers?${search}`;
};

/**
 * @typedef {object} DirectoryPaths   the request paths each directory scenario rotates over
 * @property {string[]} substring
 * @property {string[]} rare
 * @property {string[]} prefix
 * @property {string[]} category
 * @property {string[]} page20
 */

/**
 * @typedef {object} Directory
 * @property {number} profiles
 * @property {number} seed_seconds
 * @property {string[]} rare_substrings   a sample of the rare texts: handle fragments that each
 *                                         match one profile or a few
 * @property {number} rare_texts           how many rare texts the scenario rotates through
 * @property {DirectoryPaths} paths
 * @property {Record<string, string>} plans   each query's plan, from the database itself
 */

/**
 * Seeds the directory into the service's database, checks every query the scenarios send, and
 * collects the cursors of the 20th pages.
 * @param {import('./database.mjs').BenchDatabase} database
 * @param {{ url: string, token: string }} service   the service, and a bearer token to send
 * @returns {Promise<Directory>}
 */
export async function prepareDirectory(database, service) {
  const db = await openBenchDatabase(database);
  try {
    const started = performance.now();
    const { seedDirectory } = await source('../test/influencer/seed.ts');
    const entries = await seedDirectory(db, DIRECTORY_SIZE);
    await analyze(db, database.kind);
    const seedSeconds = Math.round((performance.now() - started) / 100) / 10;

    const rare = rareSubstrings(entries);
    const paths = {
      substring: COMMON_SUBSTRINGS.map((q) => directoryPath({ q })),
      rare: rare.map((q) => directoryPath({ q })),
      prefix: PREFIXES.map((q) => directoryPath({ q })),
      category: CATEGORIES.map((category) => directoryPath({ category, sort: 'popular' })),
      page20: await Promise.all(CURSOR_LISTINGS.map((l) => pathOfPage(service, l, CURSOR_PAGE))),
    };
    for (const path of Object.values(paths).flat()) await expectResults(service, path);
    const plans = await directoryPlans(db, database.kind, rare[0], paths.page20[0]);
    return {
      profiles: entries.length,
      seed_seconds: seedSeconds,
      rare_substrings: rare.slice(0, 8), // a sample of the rotation
      rare_texts: rare.length,
      paths,
      plans,
    };
  } finally {
    await db.destroy();
  }
}

/**
 * The bench's own connection to the service's database (Kysely, as the service opens it).
 * @param {import('./database.mjs').BenchDatabase} database
 * @param {{ log?: (event: any) => void }} [options]   Kysely's query log
 */
export async function openBenchDatabase(database, options = {}) {
  const { openDatabase } = await source('../src/db/database.ts');
  const location =
    database.kind === 'sqlite'
      ? { kind: 'sqlite', path: database.url.slice('sqlite:'.length) }
      : { kind: 'postgres', url: database.url };
  const db = await openDatabase(location, { poolSize: 1, ...options });
  const { sql } = await import('kysely');
  // 256 MiB of page cache for this connection only: the seeding writes ~1 GB of index pages.
  if (database.kind === 'sqlite') await sql`pragma cache_size = -262144`.execute(db);
  return db;
}

/**
 * The state a live database reaches by itself after a bulk load: statistics for the planner and,
 * on PostgreSQL, the visibility map that lets an index-only scan skip the table (autovacuum
 * vacuums after inserts too); on SQLite, what `PRAGMA optimize` would gather.
 */
export async function analyze(db, kind) {
  const { sql } = await import('kysely');
  await (kind === 'postgres' ? sql`vacuum analyze` : sql`analyze`).execute(db);
}

/**
 * Fragments of seeded handles (`the_2bc9`: the base-36 number) that few profiles contain: a
 * search for a creator one knows, which the bounded walk cannot fill.
 * @param {{ profile: { handle: string } }[]} entries
 */
function rareSubstrings(entries) {
  // Handles end in their index in base 36: from 36² on, 3 characters or more (a substring search).
  const first = 36 ** 2;
  const step = Math.floor((entries.length - first) / RARE_TEXTS);
  return Array.from({ length: RARE_TEXTS }, (_, i) => {
    const handle = entries[first + i * step].profile.handle;
    return handle.slice(handle.indexOf('_') + 1);
  });
}

/** @param {{ url: string, token: string }} service @param {string} path */
async function getDirectory(service, path) {
  const send = () =>
    fetch(service.url + path, {
      headers: { authorization: `Bearer ${service.token}`, 'x-forwarded-for': '10.201.0.1' },
    });
  // Seeding blocks this process for a while (seconds on an idle machine, minutes on a busy one):
  // a keep-alive socket the service closed meanwhile looks open until the GET goes out on it.
  const response = await send().catch(send);
  const body = await response.json();
  if (response.status !== 200)
    throw new Error(`directory: ${path} answered ${response.status} ${JSON.stringify(body)}`);
  return /** @type {{ influencers: { id: string }[], next_cursor: string | null }} */ (body);
}

/** A query the scenarios send must find something (a scenario of empty pages measures little). */
async function expectResults(service, path) {
  const { influencers } = await getDirectory(service, path);
  if (influencers.length === 0) throw new Error(`directory: ${path} found nothing`);
}

/** The path of page `page` of a listing, following next_cursor from its first page. */
async function pathOfPage(service, listing, page) {
  let cursor;
  for (let i = 1; i < page; i++) {
    const { next_cursor } = await getDirectory(service, directoryPath({ ...listing, cursor }));
    if (next_cursor === null) throw new Error(`directory: ${JSON.stringify(listing)} ends at ${i}`);
    cursor = next_cursor;
  }
  return directoryPath({ ...listing, cursor });
}

/**
 * The plan of each kind of query, from the database (SQLite: EXPLAIN QUERY PLAN; PostgreSQL:
 * EXPLAIN ANALYZE, with its timings), built by the service's own query functions.
 */
async function directoryPlans(db, kind, rareText, page20Path) {
  const store = await source('../src/influencer/directory.queries.ts');
  const { categoryFacet, EVERYONE_FACET, prefixFacet } = await source(
    '../src/influencer/search-text.ts',
  );
  const slice = (extra = {}) => ({ sort: 'popular', after: undefined, limit: 21, ...extra });
  const cursor = new URL(page20Path, 'http://x').searchParams.get('cursor') ?? '';
  const [value, id] = JSON.parse(Buffer.from(cursor.split('.')[0], 'base64url').toString('utf8'));
  const queries = {
    'substring, common text ("mar"): the bounded walk': store.walkPageQuery(
      db,
      EVERYONE_FACET,
      'mar',
      slice(),
    ),
    [`substring, rare text ("${rareText}"): the walk, then the substring index`]:
      store.walkPageQuery(db, EVERYONE_FACET, rareText, slice()),
    [`substring, rare text ("${rareText}"): the substring index`]: store.substringPageQuery(
      db,
      rareText,
      slice(),
    ),
    'prefix "ma"': store.facetPageQuery(db, prefixFacet('ma'), slice()),
    'category music, popular': store.facetPageQuery(db, categoryFacet('music'), slice()),
    'category music, popular, page 20 (keyset)': store.facetPageQuery(
      db,
      categoryFacet('music'),
      slice({ after: { value, id } }),
    ),
  };
  /** @type {Record<string, string>} */
  const plans = {};
  for (const [name, query] of Object.entries(queries)) plans[name] = await explain(db, kind, query);
  return plans;
}

export async function explain(db, kind, query) {
  const compiled = query.compile();
  const prefix = kind === 'postgres' ? 'explain (analyze, costs off) ' : 'explain query plan ';
  const { rows } = await db.executeQuery({ ...compiled, sql: prefix + compiled.sql });
  return rows.map((row) => String(row.detail ?? row['QUERY PLAN'])).join('\n');
}

/** Round-robin over the paths the directory scenario `key` sends (context.directory). */
const rotatingPath =
  (key) =>
  async (/** @type {any} */ { seed, directory }) => {
    /** @type {string[]} */
    const paths = directory.paths[key];
    let next = 0;
    return {
      request: {
        method: /** @type {const} */ ('GET'),
        path: paths[0],
        headers: { authorization: `Bearer ${seed.profileToken}` },
        setup(req) {
          req.path = paths[next++ % paths.length];
        },
      },
    };
  };

export const DIRECTORY_BUILDERS = {
  substring: rotatingPath('substring'),
  rare: rotatingPath('rare'),
  prefix: rotatingPath('prefix'),
  category: rotatingPath('category'),
  page20: rotatingPath('page20'),
};

/**
 * The directory scenarios, in the order they run; `profile10` is GET /api/profile on as many
 * connections, run once before them and again in slices between each one's own slices: those
 * slices are what its throughput is compared to (bench/suite.mjs).
 */
export const DIRECTORY_SCENARIOS = [
  {
    key: 'profile10',
    name: 'GET /api/profile (directory reference)',
    note: 'measured right before the directory scenarios, on the seeded directory; each scenario is judged against GET /api/profile measured again in slices between its own',
  },
  {
    key: 'substring',
    name: 'directory: substring, common text',
    note: `q = ${COMMON_SUBSTRINGS.join(', ')} in turn`,
  },
  {
    key: 'rare',
    name: 'directory: substring, rare text',
    note: `q = a fragment of a seeded handle (matches one profile or a few), ${RARE_TEXTS} in turn: none remembered by the service`,
  },
  { key: 'prefix', name: 'directory: 2-character prefix', note: `q = ${PREFIXES.join(', ')}` },
  {
    key: 'category',
    name: 'directory: category, popular',
    note: `category = ${CATEGORIES.join(', ')} in turn, sort=popular`,
  },
  {
    key: 'page20',
    name: 'directory: page 20 by cursor',
    note: `cursors collected by paging ${CURSOR_LISTINGS.length} listings (categories, newest, name, prefix)`,
  },
].map((s) => ({ ...s, connections: DIRECTORY_CONNECTIONS, expect: { status: 200 } }));

export const DIRECTORY_KEYS = DIRECTORY_SCENARIOS.map((s) => s.key).filter(
  (k) => k !== 'profile10',
);
