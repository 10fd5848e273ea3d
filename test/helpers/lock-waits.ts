import pg from 'pg';

/**
 * A second connection to a test's PostgreSQL database, to make a race happen on purpose: it holds
 * a row lock (a slow moment inside the service's transaction) and sees who waits for one.
 */
export class LockHolder {
  private constructor(private readonly client: pg.Client) {}

  static async connect(databaseUrl: string): Promise<LockHolder> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    return new LockHolder(client);
  }

  /** Begins a transaction holding `lockingSelect`'s locks until `release`. */
  async hold(lockingSelect: string, values: unknown[]): Promise<void> {
    await this.client.query('begin');
    await this.client.query(lockingSelect, values);
  }

  async release(): Promise<void> {
    await this.client.query('commit');
  }

  /** Resolves once a statement containing `fragment` waits for a lock; fails after 5 s. */
  async untilWaiting(fragment: string): Promise<void> {
    for (let tries = 0; tries < 200; tries += 1) {
      // Inside a transaction PostgreSQL answers from one snapshot of the activity: a fresh one.
      await this.client.query('select pg_stat_clear_snapshot()');
      const { rows } = await this.client.query(
        `select 1 from pg_stat_activity
          where wait_event_type = 'Lock' and datname = current_database()
            and pid <> pg_backend_pid() and query ilike $1`,
        [`%${fragment}%`],
      );
      if (rows.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const { rows } = await this.client.query(
      `select wait_event_type, wait_event, state, left(query, 160) as query from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()`,
    );
    throw new Error(`no statement like "${fragment}" waits for a lock: ${JSON.stringify(rows)}`);
  }

  /** Ends the connections whose statement containing `fragment` waits for a lock. */
  async terminateWaiting(fragment: string): Promise<void> {
    await this.client.query('select pg_stat_clear_snapshot()');
    await this.client.query(
      `select pg_terminate_backend(pid) from pg_stat_activity
        where wait_event_type = 'Lock' and datname = current_database()
          and pid <> pg_backend_pid() and query ilike $1`,
      [`%${fragment}%`],
    );
  }

  async end(): Promise<void> {
    await this.client.end();
  }
}
