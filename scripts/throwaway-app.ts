import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

/**
 * Runs `work` on the app as it is built for real, on a throw-away SQLite database, silent; for
 * what is read off the app rather than served (its route table, its OpenAPI document).
 */
export async function withThrowawayApp<T>(
  work: (app: FastifyInstance, dir: string) => Promise<T>,
  env: Record<string, string | undefined> = {},
): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'account-service-throwaway-'));
  try {
    const config = loadConfig({
      ...env,
      DATABASE_URL: `sqlite:${join(dir, 'auth.db')}`,
      LOG_LEVEL: 'silent',
    });
    const app = await buildApp(config, { consoleMail: () => undefined });
    try {
      await app.ready();
      return await work(app, dir);
    } finally {
      await app.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
