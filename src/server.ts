import { buildApp } from './app.js';
import { ConfigError, loadConfigOrExit } from './config.js';
import { cannotOpenDatabase } from './db/outage.js';
import { fatalErrorReport } from './operations/logging.js';

/**
 * After SIGTERM, in-flight requests get this long to finish; then the connections still open (a
 * client that sent half a request and stalls, a response it does not read) are cut, so that the
 * clean-up (mail worker, Redis, database) still runs and the process exits 0 within the grace.
 */
const DRAIN_MS = 7_000;
/** The process exits (code 1) this long after SIGTERM whatever still runs. */
const SHUTDOWN_GRACE_MS = 10_000;
/**
 * Connections the kernel completes and queues while the event loop is busy (Node's default is
 * 511). When thousands of chat sockets reconnect at once, a full queue drops handshakes, and each
 * dropped one waits a second or more for its SYN to be sent again; a deeper queue lets them wait
 * their turn instead. The kernel caps it at net.core.somaxconn (4096 on Linux since 5.4).
 */
const LISTEN_BACKLOG = 4096;

/** Why `listen` can fail through no fault of the code, in words. */
const LISTEN_FAILURES: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'no such address on this machine',
  EACCES: 'permission denied (a port below 1024 needs privileges)',
  ENOTFOUND: 'unknown host name',
  EAI_AGAIN: 'host name lookup failed',
};

/**
 * An operator's mistake that stops the start, in one line (as a configuration error is): the
 * database cannot be opened, or APP_SECRET does not open what it sealed. Else undefined.
 */
function startFailure(error: unknown): string | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause)
    if (cause instanceof ConfigError) return `configuration error: ${cause.message}`;
  return cannotOpenDatabase(error);
}

/** Ends the process as Node would (code 1), without printing the error's secrets. */
function exitWithReport(error: unknown): never {
  process.stderr.write(`${fatalErrorReport(error)}\n`);
  process.exit(1);
}
process.on('uncaughtException', exitWithReport);

const config = loadConfigOrExit();
const app = await buildApp(config).catch((error: unknown) => {
  const reason = startFailure(error);
  if (reason === undefined) exitWithReport(error);
  process.stderr.write(`${reason}\n`);
  process.exit(1);
});

await app
  .listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG })
  .catch(async (error: unknown) => {
    const reason = LISTEN_FAILURES[(error as NodeJS.ErrnoException).code ?? ''];
    if (reason === undefined) exitWithReport(error);
    // An operator's mistake, not a bug: one line, as for a configuration error.
    process.stderr.write(`cannot listen on ${config.host}:${config.port}: ${reason}\n`);
    await app.close();
    process.exit(1);
  });

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  app.log.info({ signal }, 'shutting down: draining in-flight requests');
  const cut = setTimeout(() => {
    app.log.warn('requests still open after the drain time; closing their connections');
    app.server.closeAllConnections();
  }, DRAIN_MS);
  const force = setTimeout(() => {
    app.log.error('shutdown took too long; exiting');
    process.exit(1);
  }, SHUTDOWN_GRACE_MS);
  cut.unref();
  force.unref();
  // Stops accepting connections, waits for in-flight requests, then runs every onClose hook:
  // mail worker, rate-limit store, database.
  await app.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
