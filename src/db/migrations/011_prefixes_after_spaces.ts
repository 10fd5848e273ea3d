import type { Kysely } from 'kysely';
import { addMissingPrefixFacets } from './listed-profiles.js';

/**
 * A word of a display name now also starts after white space where Unicode's word boundaries see
 * none (`#music`, `@ada`, `🔥`: search-text.ts `wordStarts`), so a 1- or 2-character query finds
 * it. Lists every existing profile under the prefix facets it lacks, computed by the service's own
 * function, as every facet is (only names with such words lack any).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await addMissingPrefixFacets(db);
}

/** The facets stay: a profile written again loses those the rule it is written by does not make. */
export async function down(): Promise<void> {}
