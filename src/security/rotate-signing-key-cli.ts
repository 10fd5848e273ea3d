import { loadConfig } from '../config.js';
import { openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { createSecretBox } from './secret-box.js';
import { deriveServerKeys, resolveAppSecret } from './server-keys.js';
import { insertNewKey, KEY_ACTIVATION_DELAY_MS, pruneRetiredKeys } from './signing-keys.js';

/**
 * `npm run rotate-signing-key`: adds a new signing key (published at once, signing after
 * 10 minutes) and deletes keys retired long enough ago. Run it again later to finish a rotation.
 */
const config = loadConfig();
const db = await openDatabase(config.database);
try {
  await migrateToLatest(db);
  const box = createSecretBox(deriveServerKeys(resolveAppSecret(config)).secretBox);
  const now = Date.now();
  const pruned = await pruneRetiredKeys(db, box, now);
  if (pruned.length > 0) console.log(`deleted retired signing keys: ${pruned.join(', ')}`);
  if (!process.argv.includes('--prune-only')) {
    await insertNewKey(db, box, now);
    console.log(
      `new signing key added; instances sign with it after ${KEY_ACTIVATION_DELAY_MS / 60_000} minutes`,
    );
  }
} finally {
  await db.destroy();
}
