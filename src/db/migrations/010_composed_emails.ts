import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../dialect.js';

interface UsersTable {
  id: string;
  email: string;
  email_normalized: string;
}

/** The rules before and as of this migration (accounts/public-user.ts), kept as they were. */
const lowerCased = (email: string) => email.trim().toLowerCase();
const composed = (email: string) => email.trim().normalize('NFC').toLowerCase();

/**
 * Addresses became one account under their composed (NFC) form, as well as lower-cased: an
 * account registered with a decomposed accent (e + U+0301) gets its composed key, so that either
 * spelling signs in to it. Only non-ASCII keys can change, and few do. Where both spellings were
 * registered as two accounts, the one already composed keeps the key and the other stays as it
 * was: reachable under its exact spelling no longer, but neither account is merged nor lost.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await rekey(db, composed);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await rekey(db, lowerCased);
}

/** What the unique index holds (migration 008). */
const KEY_MAX_LENGTH = 508;

/** Accounts read per round. */
const BATCH = 1_000;

/** A character that is not ASCII but becomes ASCII under `rule`: a look-alike of an address. */
const foldsIntoAscii = (email: string, rule: (email: string) => string) =>
  [...email].some((char) => char > '\x7f' && [...rule(char)].every((c) => c <= '\x7f'));

/**
 * Gives every account with a non-ASCII key the key `rule` makes of its address, unless that key is
 * taken, longer than the index holds, or made of a look-alike (U+1FEF composes into a backtick:
 * `a\u1fefb@x` would take `a\`b@x`, which today's rule refuses to register).
 */
async function rekey(db: Kysely<unknown>, rule: (email: string) => string): Promise<void> {
  const users = db as unknown as Kysely<{ users: UsersTable }>;
  const nonAscii = isPostgres(db)
    ? sql<boolean>`email_normalized ~ '[^\\x01-\\x7f]'`
    : sql<boolean>`email_normalized glob '*[^' || char(1) || '-' || char(127) || ']*'`;
  for (let after = ''; ;) {
    const rows = await users
      .selectFrom('users')
      .select(['id', 'email', 'email_normalized'])
      .where(nonAscii)
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    for (const row of rows) {
      const key = rule(row.email);
      if (key === row.email_normalized || [...key].length > KEY_MAX_LENGTH) continue;
      if (foldsIntoAscii(row.email.trim(), rule)) continue;
      const taken = await users
        .selectFrom('users')
        .select('id')
        .where('email_normalized', '=', key)
        .executeTakeFirst();
      if (taken !== undefined) continue;
      await users
        .updateTable('users')
        .set({ email_normalized: key })
        .where('id', '=', row.id)
        .execute();
    }
    const last = rows.at(-1);
    if (last === undefined || rows.length < BATCH) return;
    after = last.id;
  }
}
