import { loadConfigOrExit } from '../config.js';
import { openDatabase, serviceDatabaseOptions } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { createSecretBox } from './secret-box.js';
import { deriveServerKeys, resolveAppSecret } from './server-keys.js';
import {
  activeSigningKey,
  insertNewKey,
  KEY_ACTIVATION_DELAY_MS,
  loadSigningKeys,
  pruneRetiredKeys,
  SIGNING_ALGORITHM,
} from './signing-keys.js';

/**
 * `npm run rotate-signing-key`: adds a new signing key (published at once, signing after
 * 10 minutes, or at once when it is the first key of its algorithm) and deletes keys retired long
 * enough ago. Run it again later (or with `--prune-only`) to finish a rotation, or to delete the
 * EdDSA keys of older versions 30 minutes after the first ES256 key.
 */
const USAGE = 'usage: npm run rotate-signing-key [-- --prune-only]';
const args = process.argv.slice(2);
if (args.length > 1 || (args.length === 1 && args[0] !== '--prune-only')) {
  // Anything else (--help, a typo) must not add a key.
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}
const pruneOnly = args.length === 1;

const config = loadConfigOrExit();
// The service's options: behind PgBouncer (statement_timeout set by the role) it refuses the
// startup parameter the service would otherwise send.
const db = await openDatabase(config.database, serviceDatabaseOptions(config));
try {
  await migrate(config.database, db);
  const box = createSecretBox(deriveServerKeys(resolveAppSecret(config)).secretBox);
  const now = Date.now();
  const pruned = await pruneRetiredKeys(db, box, now);
  if (pruned.length > 0) console.log(`deleted retired signing keys: ${pruned.join(', ')}`);
  else if (pruneOnly) console.log('no retired signing key to delete');
  if (!pruneOnly) {
    const kid = await insertNewKey(db, box, now);
    const signsNow = activeSigningKey(await loadSigningKeys(db, box, now), now).kid === kid;
    const when = signsNow ? 'at once' : `after ${KEY_ACTIVATION_DELAY_MS / 60_000} minutes`;
    console.log(`new ${SIGNING_ALGORITHM} signing key ${kid}; instances sign with it ${when}`);
  }
} finally {
  await db.destroy();
}
