import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { isPostgres } from '../db/dialect.js';
import { ErrorBody } from '../http/schemas.js';

export type DependencyCheck = () => Promise<void>;

export interface Dependency {
  readonly check: DependencyCheck;
  /**
   * Whether the service can serve without it: Redis is optional (limits fall back to memory), so
   * while only it is away the instance is `degraded` but stays in the load balancer; taking every
   * instance out at once because a cache is down would turn a degradation into an outage.
   */
  readonly optional: boolean;
}

const CHECK_TIMEOUT_MS = 1_500;

/** Resolves when the check answers within the timeout. */
async function answers(check: DependencyCheck): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(), timeout]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The database answers, and takes writes: a PostgreSQL primary demoted by a failover, or a
 * standby the service was pointed at, answers `select 1` while every write fails (503 each), and
 * the balancer must take the instance out. So must a SQLite file whose file system the kernel
 * turned read-only under the service (ext4's emergency read-only after a disk error): reads
 * still answer, and neither `access()` nor the mount flags tell, so a one-row write does.
 */
export function databaseCheck(db: Db): DependencyCheck {
  if (!isPostgres(db)) return sqliteWriteProbe(db);
  return async () => {
    const { rows } = await sql<{ writable: boolean }>`
      select not (pg_is_in_recovery() or current_setting('transaction_read_only') = 'on') as writable
    `.execute(db);
    if (rows[0]?.writable !== true) throw new Error('the database takes no writes');
  };
}

/** How often SQLite's probe writes at most: a balancer (or anyone) asking faster shares one. */
const WRITE_PROBE_INTERVAL_MS = 1_000;

/** Real time, not the app's clock (a test's may stand still): this paces a probe. */
function sqliteWriteProbe(db: Db): DependencyCheck {
  let last: { at: number; write: Promise<void> } | undefined;
  return () => {
    const now = performance.now();
    if (last === undefined || now - last.at >= WRITE_PROBE_INTERVAL_MS)
      last = { at: now, write: writeProbe(db, Date.now()) };
    return last.write;
  };
}

async function writeProbe(db: Db, now: number): Promise<void> {
  await db
    .insertInto('readiness_probe')
    .values({ id: 1, checked_at: now })
    .onConflict((conflict) => conflict.column('id').doUpdateSet({ checked_at: now }))
    .execute();
}

const tags = ['Operations'];
const Checks = Type.Record(Type.String(), Type.Union([Type.Literal('up'), Type.Literal('down')]));
const Liveness = Type.Object({ status: Type.Literal('ok') });
const Readiness = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('unavailable')]),
  checks: Checks,
});

function readiness(
  results: readonly { dependency: Dependency; up: boolean }[],
): 'ok' | 'degraded' | 'unavailable' {
  const down = results.filter((result) => !result.up);
  if (down.some((result) => !result.dependency.optional)) return 'unavailable';
  return down.length > 0 ? 'degraded' : 'ok';
}

export const healthRoutes: FastifyPluginAsyncTypebox<{
  dependencies: Record<string, Dependency>;
}> = async (app, { dependencies }) => {
  app.get(
    '/healthz',
    {
      schema: { tags, operationId: 'getHealth', summary: 'Liveness', response: { 200: Liveness } },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags,
        operationId: 'getReadiness',
        summary:
          'Readiness: 503 while the database is away; 200 "degraded" while only an optional dependency (Redis) is',
        description:
          'While the instance shuts down, a request that still reaches it gets 503 with the error body (`unavailable`), as every route does.',
        // The shutdown's 503 (http/draining.ts) is the error body, not a readiness.
        response: { 200: Readiness, 503: Type.Union([Readiness, Type.Ref(ErrorBody)]) },
      },
    },
    async (_request, reply) => {
      const entries = Object.entries(dependencies);
      const up = await Promise.all(entries.map(([, dependency]) => answers(dependency.check)));
      const checks = Object.fromEntries(
        entries.map(([name], i) => [name, up[i] ? ('up' as const) : ('down' as const)]),
      );
      const status = readiness(entries.map(([, dependency], i) => ({ dependency, up: !!up[i] })));
      return reply.code(status === 'unavailable' ? 503 : 200).send({ status, checks });
    },
  );
};
