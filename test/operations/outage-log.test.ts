import { describe, expect, it } from 'vitest';
import { OutageLog } from '../../src/outage-log.js';

/** What the outage log wrote: level, fields, message. */
interface Line {
  readonly level: 'error' | 'warn';
  readonly fields: Record<string, unknown>;
  readonly msg: string;
}

/**
 * The tracker alone, with a clock the test moves: no database is involved, so this unit suite
 * runs once rather than per backend (the app-level checks are in operations.test.ts and
 * test/scale/postgres-restart.test.ts).
 */
function tracker(level?: 'error' | 'warn', settleMs?: number) {
  const lines: Line[] = [];
  let now = 1_000_000;
  const record =
    (at: Line['level']) =>
    (fields: Record<string, unknown>, msg: string): void => {
      lines.push({ level: at, fields, msg });
    };
  const outage = new OutageLog({
    dependency: 'database',
    meanwhile: 'requests answer 503',
    counted: (count) => `${count} refused`,
    log: { error: record('error'), warn: record('warn') } as never,
    clock: () => now,
    ...(level && { level }),
    ...(settleMs !== undefined && { settleMs }),
  });
  return {
    outage,
    lines,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('OutageLog', () => {
  it('writes nothing while the dependency answers', () => {
    const { outage, lines } = tracker();
    for (let i = 0; i < 100; i++) outage.answered();
    expect(lines).toEqual([]);
    expect(outage.isAway).toBe(false);
  });

  it('logs the first failure once, with its error, and counts the rest without a line each', () => {
    const { outage, lines, advance } = tracker();
    const first = new Error('connect ECONNREFUSED 127.0.0.1:5432');
    outage.failed(first);
    for (let i = 0; i < 999; i++) {
      advance(5);
      outage.failed(new Error('again'));
    }
    expect(lines).toEqual([
      {
        level: 'error',
        fields: { err: first, dependency: 'database' },
        msg: 'database is unavailable: requests answer 503',
      },
    ]);
    expect(outage.isAway).toBe(true);
  });

  it('every 10 s while away: how many failed since the last line, without a stack', () => {
    const { outage, lines, advance } = tracker();
    outage.failed(new Error('first'));
    advance(4_000);
    outage.failed(new Error('2'));
    advance(5_999);
    outage.failed(new Error('3')); // 9.999 s after the first line: not yet
    expect(lines).toHaveLength(1);
    advance(1);
    outage.failed(new Error('4')); // 10 s: the count of the period, itself included
    advance(3_000);
    outage.failed(new Error('5'));
    advance(17_000);
    outage.failed(new Error('6')); // 20 s later: a period with no line of its own is merged
    expect(lines.slice(1)).toEqual([
      {
        level: 'error',
        fields: { dependency: 'database', failed: 4, periodMs: 10_000 },
        msg: 'database is still unavailable: 4 refused in the last 10 s',
      },
      {
        level: 'error',
        fields: { dependency: 'database', failed: 2, periodMs: 20_000 },
        msg: 'database is still unavailable: 2 refused in the last 20 s',
      },
    ]);
  });

  it('logs the return once, with how long it was away and how many failed in all; a new outage starts afresh', () => {
    const { outage, lines, advance } = tracker('warn');
    outage.failed(new Error('first'));
    advance(2_345);
    outage.failed(new Error('second'));
    outage.answered();
    outage.answered();
    expect(lines.map((line) => [line.level, line.msg])).toEqual([
      ['warn', 'database is unavailable: requests answer 503'],
      ['warn', 'database is back after 2.3 s: 2 refused in all'],
    ]);
    expect(lines[1]?.fields).toEqual({ dependency: 'database', failed: 2, downMs: 2_345 });
    expect(outage.isAway).toBe(false);

    advance(60_000);
    outage.failed(new Error('later'));
    advance(500);
    outage.answered();
    expect(lines.slice(2).map((line) => line.msg)).toEqual([
      'database is unavailable: requests answer 503',
      'database is back after 0.5 s: 1 refused in all',
    ]);
  });

  it('with settleMs, answers between failures (a read-only database answers reads) do not end it', () => {
    const { outage, lines, advance } = tracker('warn', 10_000);
    outage.failed(new Error('cannot execute INSERT in a read-only transaction'));
    for (let i = 0; i < 100; i++) {
      advance(1_000);
      outage.answered();
      outage.answered();
      advance(1_000);
      outage.failed(new Error('again'));
    }
    expect(lines.filter((line) => /^database is (unavailable|back)/.test(line.msg))).toHaveLength(
      1,
    );
    expect(outage.isAway).toBe(true);

    advance(2_000);
    outage.answered(); // the first answer since the last failure
    advance(7_999);
    outage.answered(); // 9.999 s without a failure: not yet
    expect(outage.isAway).toBe(true);
    advance(1);
    outage.answered();
    expect(outage.isAway).toBe(false);
    expect(lines.at(-1)).toEqual({
      level: 'warn',
      fields: { dependency: 'database', failed: 101, downMs: 202_000 },
      msg: 'database is back after 202 s: 101 refused in all',
    });
  });

  it('writes a bounded number of lines for any number of failures: 6 per minute of outage, plus 2', () => {
    const { outage, lines, advance } = tracker();
    // An hour away at 100 failures a second.
    const refused = new Error('refused');
    for (let i = 0; i < 360_000; i++) {
      outage.failed(refused);
      advance(10);
    }
    outage.answered();
    expect(lines.length).toBeLessThanOrEqual(360 + 2);
    expect(lines.filter((line) => 'err' in line.fields)).toHaveLength(1);
  });
});
