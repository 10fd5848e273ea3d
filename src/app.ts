import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { DestinationStream } from 'pino';
import { verifyAccessToken } from './accounts/caller.js';
import { planCodeMail } from './auth/code-requests.js';
import { startHousekeeping } from './auth/housekeeping.js';
import { authRoutes } from './auth/routes.js';
import { User } from './auth/schemas.js';
import type { Config } from './config.js';
import type { ServiceContext } from './context.js';
import { openDatabase, serviceDatabaseOptions } from './db/database.js';
import type { EventBus } from './events/bus.js';
import { openEventBus } from './events/open-bus.js';
import { countingPublications } from './events/counted-bus.js';
import { ChatGateway, type GatewayOptions } from './chat/realtime/gateway.js';
import { chatSocketRoutes, registerWebSockets } from './chat/realtime/routes.js';
import { openSocketSeats, type SocketSeats } from './chat/realtime/socket-seats.js';
import { migrate } from './db/migrate.js';
import { authenticate } from './http/authenticate.js';
import { crossOriginRefusalHeaders, crossOriginRequests } from './http/cors.js';
import { drainOnClose } from './http/draining.js';
import { jsonObjectBodies } from './http/json-bodies.js';
import { errorHandler } from './http/error-handler.js';
import { responseSerializer } from './http/serializer.js';
import {
  answerProtocolError,
  refuseUnknownExpectations,
  requireHostHeader,
} from './http/protocol-errors.js';
import { responseHeaders, setResponseHeaders } from './http/response-headers.js';
import { logCompleted, logRequests } from './http/request-log.js';
import { trackRoutes } from './http/route-table.js';
import { ErrorBody } from './http/schemas.js';
import { openLimitStore } from './limits/open-store.js';
import { LIMITS, Limits, type ChatLimitRules } from './limits/policies.js';
import { DEFAULT_DELIVERY_TIMING, MailDelivery, type DeliveryTiming } from './mail/delivery.js';
import { createOutbox } from './mail/outbox.js';
import { consoleTransport, smtpTransport } from './mail/transports.js';
import { docsRoutes, openApiDocument } from './operations/docs.js';
import { databaseOutageLog, reportAnswers } from './db/outage.js';
import { databaseCheck, healthRoutes, type Dependency } from './operations/health.js';
import { jwksRoutes } from './operations/jwks.js';
import { loggerOptions } from './operations/logging.js';
import { Metrics, metricsRoutes } from './operations/metrics.js';
import { warnAboutSettings } from './operations/startup-warnings.js';
import { profileRoutes } from './profile/routes.js';
import { blockRoutes } from './blocks/routes.js';
import { chatRoutes } from './chat/routes.js';
import { chatComponents } from './chat/objects.js';
import { tombstoneMessagesOf } from './chat/account-deletion.js';
import { pastPolicyCondition, peersPastPolicy } from './chat/conversations.store.js';
import { removeFollowsOnBlock } from './influencer/blocking.js';
import { createAccessTokens } from './security/access-tokens.js';
import { createCodeHasher } from './security/one-time-codes.js';
import { createPasswordHasher, hashConcurrencyFor } from './security/password-hashing.js';
import { createPasswordPolicy } from './security/password-policy.js';
import { createRefreshTokens } from './security/refresh-tokens.js';
import { createSecretBox } from './security/secret-box.js';
import { deriveServerKeys, resolveAppSecret } from './security/server-keys.js';
import { createCursorCodec } from './http/cursor.js';
import { createTextDigests } from './chat/message-text.js';
import { deleteInfluencerData } from './influencer/account-deletion.js';
import { influencerRoutes } from './influencer/routes.js';
import { Influencer } from './influencer/fields.js';

/** What tests (and the benchmark) may substitute; production uses the defaults. */
export interface AppOverrides {
  readonly clock?: () => number;
  readonly deliveryTiming?: DeliveryTiming;
  readonly logStream?: DestinationStream;
  /** Where the development mail fallback prints (default: standard output). */
  readonly consoleMail?: (text: string) => void;
  /** Replaces the event bus (tests subscribe to what the groups publish). */
  readonly events?: EventBus;
  /** Raises (or lowers) the chat limits, e.g. for a test of 200 concurrent sends. */
  readonly chatLimits?: Partial<ChatLimitRules>;
  /** The chat socket's timing (e.g. a heartbeat of 100 ms instead of 30 s). */
  readonly realtime?: GatewayOptions;
  /** Replaces where sockets are counted across instances (e.g. seats with a lease of 1 s). */
  readonly socketSeats?: SocketSeats;
  /** How long a request may take to arrive (e.g. 500 ms instead of 30 s). */
  readonly requestTiming?: RequestTiming;
  /**
   * false: no background sweeps of expired and burnt rows (tests sweep when they mean to: a sweep
   * at a random moment of the first minute deletes rows a test is still looking at); or the
   * first sweep's window (default FIRST_SWEEP_WITHIN_MS).
   */
  readonly housekeeping?: false | { readonly firstSweepWithinMs: number };
}

/** How long a client may take to send a whole request, headers and body, and how often Node looks. */
export interface RequestTiming {
  readonly timeoutMs: number;
  readonly checkIntervalMs: number;
}

/**
 * A request (at most 16 KiB) not fully received within 30 s is answered `408` and its connection
 * closed (protocol-errors.ts). Node looks every second, not every 30 s (its default, which lets a
 * stalled request stay up to a minute); a look costs microseconds per open connection. Fastify turns Node's own limit
 * off (its `requestTimeout` defaults to 0), so without this a client that sends its headers and then
 * a byte now and then, or nothing, holds its connection and request for ever: enough of them and
 * the process runs out of sockets. An upgraded chat socket is no longer a request: not affected.
 */
export const DEFAULT_REQUEST_TIMING: RequestTiming = { timeoutMs: 30_000, checkIntervalMs: 1_000 };

/**
 * Node's HTTP server options. Only a WebSocket handshake is an upgrade: any other `Upgrade` (`h2c`
 * from `curl --http2`) or a broken handshake is served as the plain request it also is, with the
 * contract's JSON, instead of the `ws` library's HTML refusal (Node 22.21+ and 24.9+ ask this
 * callback; older ones ignore it). `Host` is checked by requireHostHeader, with our body.
 */
const HTTP_OPTIONS = {
  requireHostHeader: false,
  shouldUpgradeCallback: (request: IncomingMessage): boolean =>
    request.method === 'GET' &&
    /^websocket$/i.test(request.headers.upgrade ?? '') &&
    typeof request.headers['sec-websocket-key'] === 'string',
};

export async function buildApp(
  config: Config,
  overrides: AppOverrides = {},
): Promise<FastifyInstance> {
  const clock = overrides.clock ?? Date.now;
  const setCrossOriginHeaders = crossOriginRefusalHeaders(config.corsOrigins);
  const requestTiming = overrides.requestTiming ?? DEFAULT_REQUEST_TIMING;
  const app = Fastify({
    // Secrets never reach the log, even if someone logs a body or headers later.
    logger: loggerOptions(config.logLevel, overrides.logStream),
    // One line per request (below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 16 * 1024,
    trustProxy: config.trustProxy,
    // Unique across instances and restarts, unlike Fastify's counter: an answer's X-Request-Id
    // finds its log line wherever it was served. Never taken from the request: a client could
    // pick another's, or write anything into the log.
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    // Our own 503 body while draining (http/draining.ts).
    return503OnClosing: false,
    // Errors Fastify raises before routing (bad URL encoding, over-long parameter) get our body
    // too, and, since no hook runs for them, their log line and metrics here.
    frameworkErrors: (error, request, reply) => {
      // A WebSocket handshake refused here is on a socket Node no longer tracks (the upgrade took
      // it over), and @fastify/websocket closes it in an onResponse hook, which does not run:
      // left open, it would hold a descriptor for ever and the shutdown with it.
      const upgrade = request.headers.upgrade !== undefined;
      if (upgrade) reply.header('connection', 'close');
      setResponseHeaders(request, reply);
      setCrossOriginHeaders(request, reply);
      reply.raw.once('finish', () => {
        logCompleted(request, reply);
        metrics.observeResponse(request, reply);
        if (upgrade) request.raw.socket.destroySoon();
      });
      return renderError(error, request, reply);
    },
    // So do requests Node cannot parse, and those without Host (protocol-errors.ts).
    clientErrorHandler: answerProtocolError,
    http: {
      ...HTTP_OPTIONS,
      // Headers are part of the request: they get no longer than all of it (Node requires <=).
      headersTimeout: requestTiming.timeoutMs,
      connectionsCheckingInterval: requestTiming.checkIntervalMs,
    },
    requestTimeout: requestTiming.timeoutMs,
    ajv: { customOptions: { coerceTypes: false, allErrors: true } },
    schemaController: { compilersFactory: { buildSerializer: responseSerializer() } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const databaseOutage = databaseOutageLog(app.log, clock);
  const renderError = errorHandler(databaseOutage);
  app.setErrorHandler(renderError);
  warnAboutSettings(config, app.log);

  const keys = deriveServerKeys(resolveAppSecret(config));
  const box = createSecretBox(keys.secretBox);
  // Every answer the database gives tells its outage log it is back (when it was away).
  const db = (await openDatabase(config.database, serviceDatabaseOptions(config))).withPlugin(
    reportAnswers(databaseOutage),
  );
  const newer = await migrate(config.database, db);
  if (newer.length > 0)
    app.log.warn(
      { migrations: newer },
      'the database was migrated by a newer build: this one runs on it without migrating (finish the deploy, or roll forward)',
    );
  // Readiness asks PostgreSQL on a connection of its own: through the pool, a probe waiting behind
  // a burst of requests would call a busy instance down, and every instance of a busy fleet with it.
  const probeDb =
    config.database.kind === 'postgres'
      ? await openDatabase(config.database, { ...serviceDatabaseOptions(config), poolSize: 1 })
      : db;

  // Each Redis client waits up to 2 s for Redis at start-up: side by side, not one after another.
  const [{ store: limitStore, check: redisCheck }, bus, seats] = await Promise.all([
    openLimitStore(config, clock, app.log),
    overrides.events ?? openEventBus(config, clock, app.log),
    overrides.socketSeats ?? openSocketSeats(config, app.log),
  ]);

  const transport = config.smtpUrl
    ? await smtpTransport(config.smtpUrl, config.mailFrom)
    : consoleTransport(config.mailFrom, overrides.consoleMail);
  const delivery = new MailDelivery({
    db,
    box,
    transport,
    log: app.log,
    clock,
    timing: overrides.deliveryTiming ?? DEFAULT_DELIVERY_TIMING,
    // The worker starts on ready, once ctx (below) exists.
    planCodeMail: (request) => planCodeMail(ctx, request),
    databaseOutage,
  });
  const metrics = new Metrics(() => delivery.pendingCount());
  const events = countingPublications(bus, (type, recipients) =>
    metrics.realtime.eventPublished(type, recipients),
  );
  const stopHousekeeping =
    overrides.housekeeping === false
      ? async () => {}
      : startHousekeeping(db, clock, app.log, databaseOutage, overrides.housekeeping);
  app.addHook('onReady', async () => delivery.start());
  // After in-flight requests are done: stop the workers first, then what they use.
  app.addHook('onClose', async () => {
    await stopHousekeeping();
    await delivery.stop();
    await limitStore.close();
    await events.close();
    await seats.close();
    await db.destroy();
    if (probeDb !== db) await probeDb.destroy();
  });

  const accessTokens = await createAccessTokens({ db, box, issuer: config.publicUrl, clock });
  const ctx: ServiceContext = {
    config,
    db,
    clock,
    passwordHasher: await createPasswordHasher(
      metrics.observeHash,
      hashConcurrencyFor(config.threadPoolSize),
    ),
    passwordPolicy: createPasswordPolicy(config.passwordMinLength),
    codeHasher: createCodeHasher(keys.codeHmac),
    accessTokens,
    refreshTokens: createRefreshTokens(keys.refreshToken),
    limits: new Limits(limitStore, clock, { ...LIMITS, ...overrides.chatLimits }),
    outbox: createOutbox(box, () => delivery.wake()),
    events,
    cursors: createCursorCodec(keys.cursorHmac),
    textDigests: createTextDigests(keys.messageDigest),
    accountDeletionHooks: [tombstoneMessagesOf({ clock, events }), deleteInfluencerData],
    blockHooks: [removeFollowsOnBlock],
    conversationsPastPolicy: (userId, peerIds) => peersPastPolicy(db, userId, peerIds),
    pastPolicyCondition,
  };

  // First: its hooks must see an upgrade before any other hook can refuse it.
  const deps = { ctx, metrics: metrics.realtime, log: app.log, databaseOutage, seats };
  const gateway = await registerWebSockets(app, new ChatGateway(deps, overrides.realtime));
  // Before every hook that may refuse: a page reads a refusal only with its CORS headers.
  await crossOriginRequests(app, config.corsOrigins);
  // JSON only: without its text/plain parser, Fastify answers 415 for any other media type.
  app.removeContentTypeParser('text/plain');
  requireHostHeader(app);
  refuseUnknownExpectations(app);
  responseHeaders(app);
  drainOnClose(app);
  app.setNotFoundHandler(trackRoutes(app));
  jsonObjectBodies(app);
  metrics.instrument(app);
  logRequests(app);
  app.addSchema(ErrorBody);
  app.addSchema(User);
  app.addSchema(Influencer);
  for (const schema of chatComponents) app.addSchema(schema);

  const dependencies: Record<string, Dependency> = {
    database: { check: databaseCheck(probeDb), optional: false },
  };
  if (redisCheck !== undefined) dependencies.redis = { check: redisCheck, optional: true };

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
  await app.register(influencerRoutes, { ctx });
  await app.register(blockRoutes, { ctx });
  await app.register(chatRoutes, { ctx });
  await app.register(chatSocketRoutes, { gateway });
  await app.register(healthRoutes, { dependencies });
  await app.register(metricsRoutes, { metrics });
  await app.register(jwksRoutes, { tokens: accessTokens });
  await app.register(docsRoutes, { publicUrl: config.publicUrl });
  return app;
}
