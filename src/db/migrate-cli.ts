import { loadConfigOrExit } from '../config.js';
import { openDatabase, serviceDatabaseOptions } from './database.js';
import { migrate } from './migrate.js';

const config = loadConfigOrExit();
const db = await openDatabase(config.database, serviceDatabaseOptions(config)); // as the service connects
try {
  await migrate(config.database, db);
  console.log('database is up to date');
} finally {
  await db.destroy();
}
