import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoTimestamp, isoTimestampOrNull } from '../../src/http/timestamps.js';

/** Date's whole range: ±100,000,000 days around the epoch. */
const DATE_LIMIT = 8.64e15;
const reference = (ms: number) => new Date(ms).toISOString();

describe('isoTimestamp', () => {
  it('writes every time in Date’s range exactly as Date#toISOString does', () => {
    fc.assert(
      fc.property(fc.integer({ min: -DATE_LIMIT, max: DATE_LIMIT }), (ms) => {
        expect(isoTimestamp(ms)).toBe(reference(ms));
      }),
      { numRuns: 20_000 },
    );
  });

  it('agrees on the times a service stores (years 1970–2200), where its own arithmetic runs', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Date.UTC(2200, 0, 1) }), (ms) => {
        expect(isoTimestamp(ms)).toBe(reference(ms));
      }),
      { numRuns: 50_000 },
    );
  });

  it('gets the edges right: leap days, centuries, the ends of four-digit years', () => {
    const edges = [
      Date.UTC(2000, 1, 29), // 400-year leap day
      Date.UTC(2100, 1, 28, 23, 59, 59, 999), // 2100 is no leap year
      Date.UTC(2100, 2, 1),
      Date.UTC(2024, 1, 29, 12, 0, 0, 7),
      Date.UTC(1969, 11, 31, 23, 59, 59, 999),
      0,
      -62_167_219_200_000, // 0000-01-01T00:00:00.000Z
      -62_167_219_200_001, // the year before: signed, six digits
      253_402_300_799_999, // 9999-12-31T23:59:59.999Z
      253_402_300_800_000, // +010000-01-01
    ];
    for (const ms of edges) expect(isoTimestamp(ms)).toBe(reference(ms));
    expect(isoTimestamp(Date.UTC(2000, 1, 29, 1, 2, 3, 4))).toBe('2000-02-29T01:02:03.004Z');
  });

  it('keeps null as null', () => {
    expect(isoTimestampOrNull(null)).toBeNull();
    expect(isoTimestampOrNull(0)).toBe('1970-01-01T00:00:00.000Z');
  });
});
