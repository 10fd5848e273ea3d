import { loadConfigOrExit } from '../config.js';
import { openDatabase } from './database.js';
import { migrate } from './migrate.js';

const config = loadConfigOrExit();
const db = await openDatabase(config.database);
try {
  await migrate(config.database, db);
  console.log('database is up to date');
} finally {
  await db.destroy();
}
