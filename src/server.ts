import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';

/** In-flight requests get this long to finish after SIGTERM before the process exits anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    process.exit(1);
  }
}

const config = configOrExit();
const app = await buildApp(config);

await app.listen({ port: config.port, host: config.host });

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  app.log.info({ signal }, 'shutting down: draining in-flight requests');
  const force = setTimeout(() => {
    app.log.error('shutdown took too long; exiting');
    process.exit(1);
  }, SHUTDOWN_GRACE_MS);
  force.unref();
  // Stops accepting connections, waits for in-flight requests, then runs every onClose hook:
  // mail worker, rate-limit store, database.
  await app.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
