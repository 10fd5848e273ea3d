import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import { verifyAccessToken } from './accounts/caller.js';
import { startHousekeeping } from './auth/housekeeping.js';
import { authRoutes } from './auth/routes.js';
import { User } from './auth/schemas.js';
import type { Config } from './config.js';
import type { ServiceContext } from './context.js';
import { openDatabase } from './db/database.js';
import type { EventBus } from './events/bus.js';
import { MemoryEventBus } from './events/memory-bus.js';
import { migrateToLatest } from './db/migrate.js';
import { authenticate } from './http/authenticate.js';
import { drainOnClose } from './http/draining.js';
import { renderError } from './http/error-handler.js';
import { trackRoutes } from './http/route-table.js';
import { ErrorBody } from './http/schemas.js';
import { FallbackWindowStore } from './limits/fallback-store.js';
import { MemoryWindowStore } from './limits/memory-store.js';
import { Limits } from './limits/policies.js';
import type { SlidingWindowStore } from './limits/sliding-window.js';
import { DEFAULT_DELIVERY_TIMING, MailDelivery, type DeliveryTiming } from './mail/delivery.js';
import { createOutbox } from './mail/outbox.js';
import { consoleTransport, smtpTransport } from './mail/transports.js';
import { docsRoutes, openApiDocument } from './operations/docs.js';
import { databaseCheck, healthRoutes, type DependencyCheck } from './operations/health.js';
import { jwksRoutes } from './operations/jwks.js';
import { Metrics, metricsRoutes } from './operations/metrics.js';
import { profileRoutes } from './profile/routes.js';
import { createAccessTokens } from './security/access-tokens.js';
import { createCodeHasher } from './security/one-time-codes.js';
import { createPasswordHasher } from './security/password-hashing.js';
import { createPasswordPolicy } from './security/password-policy.js';
import { createRefreshTokens } from './security/refresh-tokens.js';
import { createSecretBox } from './security/secret-box.js';
import { deriveServerKeys, resolveAppSecret } from './security/server-keys.js';
import { clientIp } from './http/client-ip.js';

/** What tests (and the benchmark) may substitute; production uses the defaults. */
export interface AppOverrides {
  readonly clock?: () => number;
  readonly deliveryTiming?: DeliveryTiming;
  readonly logStream?: DestinationStream;
  /** Where the development mail fallback prints (default: standard output). */
  readonly consoleMail?: (text: string) => void;
}

/** Secrets never reach the log, even if someone logs a body or headers later. */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  '*.password',
  '*.new_password',
  '*.refresh_token',
  '*.access_token',
  '*.password_hash',
];

export async function buildApp(
  config: Config,
  overrides: AppOverrides = {},
): Promise<FastifyInstance> {
  const clock = overrides.clock ?? Date.now;
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      ...(overrides.logStream && { stream: overrides.logStream }),
    },
    // One line per request (below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 16 * 1024,
    trustProxy: config.trustProxy,
    // Our own 503 body while draining (http/draining.ts).
    return503OnClosing: false,
    // Errors Fastify raises before routing (bad URL encoding, over-long parameter) get our body too.
    frameworkErrors: (error, request, reply) => renderError(error, request, reply),
    ajv: { customOptions: { coerceTypes: false, allErrors: true } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const keys = deriveServerKeys(resolveAppSecret(config));
  const box = createSecretBox(keys.secretBox);
  const db = await openDatabase(config.database, { poolSize: config.databasePoolSize });
  await migrateToLatest(db);

  const { store: limitStore, check: redisCheck } = await openLimitStore(config, clock, app);

  const transport = config.smtpUrl
    ? await smtpTransport(config.smtpUrl, config.mailFrom)
    : consoleTransport(config.mailFrom, overrides.consoleMail);
  if (!config.smtpUrl) {
    app.log.warn(
      'SMTP_URL is not set: e-mails, codes included, are printed to the console. For development only.',
    );
  }
  const delivery = new MailDelivery({
    db,
    box,
    transport,
    log: app.log,
    clock,
    timing: overrides.deliveryTiming ?? DEFAULT_DELIVERY_TIMING,
  });
  const events = await openEventBus(config, clock, app.log);
  const stopHousekeeping = startHousekeeping(db, clock, app.log);
  app.addHook('onReady', async () => delivery.start());
  // After in-flight requests are done: stop the workers first, then what they use.
  app.addHook('onClose', async () => {
    stopHousekeeping();
    await delivery.stop();
    await limitStore.close();
    await events.close();
    await db.destroy();
  });

  const metrics = new Metrics(() => delivery.pendingCount());
  const accessTokens = await createAccessTokens({ db, box, issuer: config.publicUrl, clock });
  const ctx: ServiceContext = {
    config,
    db,
    clock,
    hasher: await createPasswordHasher(metrics.observeHash),
    policy: createPasswordPolicy(config.passwordMinLength),
    codes: createCodeHasher(keys.codeHmac),
    accessTokens,
    refreshTokens: createRefreshTokens(keys.refreshToken),
    limits: new Limits(limitStore, clock),
    outbox: createOutbox(box, () => delivery.wake()),
    events,
  };

  // JSON only: without its text/plain parser, Fastify answers 415 for any other media type.
  app.removeContentTypeParser('text/plain');
  app.setErrorHandler(renderError);
  drainOnClose(app);
  app.setNotFoundHandler(trackRoutes(app));
  // A body-less POST is validated as `{}`, so missing fields are reported one by one.
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.routeOptions.schema?.body !== undefined)
      request.body = {};
  });
  metrics.instrument(app);
  app.addHook('onRequest', async (request) => {
    request.log.debug(
      { method: request.method, url: request.url.split('?')[0] },
      'request received',
    );
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url,
        url: request.url.split('?')[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        ip: clientIp(request),
      },
      'request completed',
    );
  });
  app.addSchema(ErrorBody);
  app.addSchema(User);

  const checks: Record<string, DependencyCheck> = { database: databaseCheck(db) };
  if (redisCheck !== undefined) checks.redis = redisCheck;

  await app.register(openApiDocument, { publicUrl: config.publicUrl });
  app.addHook(
    'onRequest',
    authenticate({
      verify: (token) => verifyAccessToken(ctx, token),
      takeAnonymousRequest: (ip) => ctx.limits.takeAuthRequest(ip),
    }),
  );
  await app.register(authRoutes, { ctx });
  await app.register(profileRoutes, { ctx });
  await app.register(healthRoutes, { checks });
  await app.register(metricsRoutes, { metrics });
  await app.register(jwksRoutes, { tokens: accessTokens });
  await app.register(docsRoutes);
  return app;
}

/** One process by default; with REDIS_URL, Redis pub/sub reaching every instance. */
async function openEventBus(
  config: Config,
  clock: () => number,
  log: FastifyBaseLogger,
): Promise<EventBus> {
  if (config.redisUrl === undefined) return new MemoryEventBus(log, clock);
  const { RedisEventBus } = await import('./events/redis-bus.js');
  return RedisEventBus.connect(config.redisUrl, log, clock);
}

/** Memory by default; with REDIS_URL, Redis shared by every instance, memory while it is away. */
async function openLimitStore(
  config: Config,
  clock: () => number,
  app: FastifyInstance,
): Promise<{ store: SlidingWindowStore; check?: DependencyCheck }> {
  const memory = new MemoryWindowStore(clock);
  if (config.redisUrl === undefined) return { store: memory };
  const { RedisWindowStore } = await import('./limits/redis-store.js');
  const redis = RedisWindowStore.connect(config.redisUrl);
  redis.client.on('error', () => undefined); // reported through FallbackWindowStore, once per outage
  return {
    store: new FallbackWindowStore(redis, memory, app.log),
    check: async () => {
      await redis.client.ping();
    },
  };
}
