import type { FastifyBaseLogger } from 'fastify';

export interface OutageLogOptions {
  /** The dependency as it starts a sentence: `database`, `Redis`. */
  readonly dependency: string;
  /** What the service does meanwhile, said once when it goes away. */
  readonly meanwhile: string;
  /** A count of failures in words: `3 requests refused`. */
  readonly counted: (count: number) => string;
  readonly log: Pick<FastifyBaseLogger, 'error' | 'warn'>;
  /** Level of the line saying it went away and of the counts (the return is `warn`). */
  readonly level?: 'error' | 'warn';
  readonly clock?: () => number;
  /** While it is away, a count of the failures is logged at most this often. */
  readonly reportEveryMs?: number;
  /** Whether the first error is logged with its stack (default) or by its message only. */
  readonly withStack?: boolean;
  /**
   * An answer ends the outage only once this long has passed without a failure (default 0: the
   * first answer does). For a dependency that answers some calls while it refuses others (a
   * read-only database answers reads), so that each refused call does not start an outage anew.
   */
  readonly settleMs?: number;
}

const DEFAULT_REPORT_EVERY_MS = 10_000;

/**
 * A dependency's outage in a bounded number of log lines, whatever the traffic: one when it goes
 * away (with the first error's stack, the only one logged), a count of failures at most every
 * `reportEveryMs` while it stays away (written with the next failure, so an idle service writes
 * nothing), and one when it answers again (after `settleMs` without a failure). Callers report
 * every failure and every answer.
 */
export class OutageLog {
  private awaySince: number | undefined;
  private lastFailedAt = 0;
  /** The first answer since the last failure, while away. */
  private answeredSince: number | undefined;
  private reportedAt = 0;
  private failedSinceReport = 0;
  private failedInAll = 0;
  private readonly clock: () => number;
  private readonly reportEveryMs: number;

  constructor(private readonly options: OutageLogOptions) {
    this.clock = options.clock ?? Date.now;
    this.reportEveryMs = options.reportEveryMs ?? DEFAULT_REPORT_EVERY_MS;
  }

  get isAway(): boolean {
    return this.awaySince !== undefined;
  }

  /** A call failed because the dependency is unavailable. */
  failed(error: unknown): void {
    const now = this.clock();
    const { dependency, meanwhile, counted, log, level = 'error' } = this.options;
    this.failedInAll++;
    this.failedSinceReport++;
    this.lastFailedAt = now;
    this.answeredSince = undefined;
    if (this.awaySince === undefined) {
      this.awaySince = now;
      this.reportedAt = now;
      const cause = this.options.withStack === false ? { error: messageOf(error) } : { err: error };
      log[level]({ ...cause, dependency }, `${dependency} is unavailable: ${meanwhile}`);
      return;
    }
    const elapsed = now - this.reportedAt;
    if (elapsed < this.reportEveryMs) return;
    log[level](
      { dependency, failed: this.failedSinceReport, periodMs: elapsed },
      `${dependency} is still unavailable: ${counted(this.failedSinceReport)} in the last ${seconds(elapsed)}`,
    );
    this.reportedAt = now;
    this.failedSinceReport = 0;
  }

  /** The dependency answered a call. Cheap when it was not away: one comparison. */
  answered(): void {
    if (this.awaySince === undefined) return;
    const now = this.clock();
    this.answeredSince ??= now;
    if (now - this.lastFailedAt < (this.options.settleMs ?? 0)) return;
    const { dependency, counted, log } = this.options;
    const downMs = this.answeredSince - this.awaySince;
    log.warn(
      { dependency, failed: this.failedInAll, downMs },
      `${dependency} is back after ${seconds(downMs)}: ${counted(this.failedInAll)} in all`,
    );
    this.awaySince = undefined;
    this.answeredSince = undefined;
    this.failedSinceReport = 0;
    this.failedInAll = 0;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}
