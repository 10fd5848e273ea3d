import type { Kysely } from 'kysely';
import { addMissingPrefixFacets } from './listed-profiles.js';

/**
 * A word of a display name now also starts at a letter after an apostrophe, period, colon or
 * middle dot inside what Unicode's word boundaries call one word (`L’École`, `O'Neil`,
 * `Ada.Lovelace`: search-text.ts `JOINED_WORD`), so `ec`, `ne` and `lo` find them. Lists every
 * existing profile under the prefix facets it lacks, as 011 did for words after white space.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await addMissingPrefixFacets(db);
}

/** The facets stay: a profile written again loses those the rule it is written by does not make. */
export async function down(): Promise<void> {}
