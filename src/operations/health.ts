import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql } from 'kysely';
import type { Db } from '../db/database.js';

export type DependencyCheck = () => Promise<void>;

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

export function databaseCheck(db: Db): DependencyCheck {
  return async () => {
    await sql`select 1`.execute(db);
  };
}

const tags = ['Operations'];
const Status = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
  checks: Type.Optional(
    Type.Record(Type.String(), Type.Union([Type.Literal('up'), Type.Literal('down')])),
  ),
});

export const healthRoutes: FastifyPluginAsyncTypebox<{
  checks: Record<string, DependencyCheck>;
}> = async (app, { checks }) => {
  app.get(
    '/healthz',
    { schema: { tags, summary: 'Liveness', response: { 200: Status } } },
    async () => ({
      status: 'ok' as const,
    }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags,
        summary: 'Readiness: database (and Redis) answer',
        response: { 200: Status, 503: Status },
      },
    },
    async (_request, reply) => {
      const names = Object.keys(checks);
      const results = await Promise.all(
        names.map((name) => answers(checks[name] as DependencyCheck)),
      );
      const down = names.filter((_, i) => !results[i]);
      if (down.length === 0) return { status: 'ok' as const };
      const report = Object.fromEntries(
        names.map((name, i) => [name, results[i] ? ('up' as const) : ('down' as const)]),
      );
      return reply.code(503).send({ status: 'unavailable' as const, checks: report });
    },
  );
};
