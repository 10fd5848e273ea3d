import { sql, type Kysely, type RawBuilder } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * The Influencer group: profiles, their directory facets, and follows.
 *
 * Search structures (see README, "Directory search"):
 * - `influencer_facets`: one row per profile and facet (`*` for everyone, `c:<category>`, and
 *   `p:<token>` for each 1–2 character prefix of the handle and of the display name's words),
 *   carrying copies of the sort keys (and the searched text), so that every listing without a
 *   substring query is one walk down an index in the order asked for, however large the
 *   directory, and a common substring is found by the same walk, filtering;
 * - substrings of 3+ characters: PostgreSQL's pg_trgm GIN index; SQLite's FTS5 trigram table,
 *   kept in step with the profiles by triggers (same statement, so same transaction).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) await createPostgresProfiles(db);
  else await createSqliteProfiles(db);

  // The name sort and its index compare code points, the same on both databases.
  const folded = isPostgres(db) ? sql`text collate "C"` : sql`text`;
  await db.schema
    .createTable('influencer_facets')
    .addColumn('influencer_id', 'varchar(36)', (c) =>
      c.notNull().references('influencer_profiles.id').onDelete('cascade'),
    )
    .addColumn('facet', folded, (c) => c.notNull())
    .addColumn('followers_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('search_name', folded, (c) => c.notNull())
    .addColumn('handle', 'varchar(30)', (c) => c.notNull())
    .addPrimaryKeyConstraint('influencer_facets_pk', ['influencer_id', 'facet'])
    .execute();
  // Each also carries the searched text, so a substring query's walk reads the index alone.
  await createIndexes(db, 'influencer_facets', {
    influencer_facets_popular: [
      'facet, followers_count desc, influencer_id desc',
      'search_name, handle',
    ],
    influencer_facets_newest: ['facet, created_at desc, influencer_id desc', 'search_name, handle'],
    influencer_facets_name: ['facet, search_name, influencer_id', 'handle'],
  });

  await db.schema
    .createTable('follows')
    .addColumn('follower_id', 'varchar(36)', (c) =>
      c.notNull().references('users.id').onDelete('cascade'),
    )
    .addColumn('influencer_id', 'varchar(36)', (c) =>
      c.notNull().references('influencer_profiles.id').onDelete('cascade'),
    )
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('follows_pk', ['follower_id', 'influencer_id'])
    .execute();
  await createIndexes(db, 'follows', {
    follows_followers: ['influencer_id, created_at desc, follower_id desc'],
    follows_following: ['follower_id, created_at desc, influencer_id desc'],
  });
}

/**
 * B-tree indexes, `name: [key columns with their directions, payload columns]`: PostgreSQL
 * INCLUDEs the payload (stored, not ordered on); SQLite, which has no INCLUDE, appends it.
 */
async function createIndexes(
  db: Kysely<unknown>,
  table: string,
  indexes: Record<string, [key: string, payload?: string]>,
) {
  for (const [name, [key, payload]] of Object.entries(indexes)) {
    const columns =
      payload === undefined
        ? sql.raw(`(${key})`)
        : sql.raw(isPostgres(db) ? `(${key}) include (${payload})` : `(${key}, ${payload})`);
    await sql`create index ${sql.id(name)} on ${sql.id(table)} ${columns}`.execute(db);
  }
}

/** The profiles table; its key, the folded text's type and the table's options differ by database. */
async function createProfilesTable(
  db: Kysely<unknown>,
  dialect: { key: RawBuilder<unknown>; folded: RawBuilder<unknown>; options: RawBuilder<unknown> },
) {
  await sql`
    create table influencer_profiles (
      ${dialect.key},
      handle varchar(30) not null unique,
      display_name text not null,
      search_name ${dialect.folded} not null,
      bio text,
      avatar_url text,
      categories text not null,
      links text not null,
      dm_policy varchar(16) not null,
      followers_count integer not null default 0,
      created_at bigint not null,
      updated_at bigint not null
    ) ${dialect.options}`.execute(db);
}

async function createPostgresProfiles(db: Kysely<unknown>): Promise<void> {
  // A trusted extension (PostgreSQL 13+): the database owner may create it.
  await sql`create extension if not exists pg_trgm`.execute(db);
  await createProfilesTable(db, {
    key: sql`id varchar(36) primary key references users (id) on delete cascade`,
    folded: sql`text collate "C"`,
    // Room on each page lets a follow's count update stay a HOT update, touching no index.
    options: sql`with (fillfactor = 90)`,
  });
  // One index per column: the planner costs these far better than one two-column GIN index.
  // No fast-update pending list: every search would scan it, and the planner shuns an index
  // with a long one; profiles are written far less often than searched.
  await sql`create index influencer_profiles_handle_trgm on influencer_profiles
    using gin (handle gin_trgm_ops) with (fastupdate = off)`.execute(db);
  await sql`create index influencer_profiles_name_trgm on influencer_profiles
    using gin (search_name gin_trgm_ops) with (fastupdate = off)`.execute(db);
}

async function createSqliteProfiles(db: Kysely<unknown>): Promise<void> {
  // `doc_id` is the FTS5 row id: an INTEGER PRIMARY KEY, so VACUUM never renumbers it.
  await createProfilesTable(db, {
    key: sql`doc_id integer primary key,
      id varchar(36) not null unique references users (id) on delete cascade`,
    folded: sql`text`,
    options: sql``,
  });
  // External content (no second copy of the text); case_sensitive 1: the text is folded already.
  await sql`create virtual table influencer_search using fts5(
    handle, search_name,
    content = 'influencer_profiles', content_rowid = 'doc_id',
    tokenize = 'trigram case_sensitive 1')`.execute(db);
  await sql`create trigger influencer_search_insert after insert on influencer_profiles begin
    insert into influencer_search (rowid, handle, search_name)
      values (new.doc_id, new.handle, new.search_name);
  end`.execute(db);
  await sql`create trigger influencer_search_delete after delete on influencer_profiles begin
    insert into influencer_search (influencer_search, rowid, handle, search_name)
      values ('delete', old.doc_id, old.handle, old.search_name);
  end`.execute(db);
  await sql`create trigger influencer_search_update
    after update of handle, search_name on influencer_profiles begin
    insert into influencer_search (influencer_search, rowid, handle, search_name)
      values ('delete', old.doc_id, old.handle, old.search_name);
    insert into influencer_search (rowid, handle, search_name)
      values (new.doc_id, new.handle, new.search_name);
  end`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('follows').execute();
  await db.schema.dropTable('influencer_facets').execute();
  if (!isPostgres(db)) await sql`drop table influencer_search`.execute(db);
  await db.schema.dropTable('influencer_profiles').execute();
}
