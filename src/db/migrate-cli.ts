import { loadConfigOrExit } from '../config.js';
import { openDatabase, serviceDatabaseOptions } from './database.js';
import { migrate } from './migrate.js';

const config = loadConfigOrExit();
const db = await openDatabase(config.database, serviceDatabaseOptions(config)); // as the service connects
try {
  const newer = await migrate(config.database, db);
  console.log(
    newer.length === 0
      ? 'database is up to date'
      : `database is ahead of this build (a newer one ran ${newer.join(', ')}): nothing to do`,
  );
} finally {
  await db.destroy();
}
