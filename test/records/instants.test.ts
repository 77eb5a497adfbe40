import { describe, expect, it } from 'vitest';
import { utcTimestamp } from '../../records/canonical.js';
import { isUtcIso } from '../../records/instants.js';

/** What the check stands in for: the text is its own round trip through Date. */
const reference = (text: string): boolean => {
  const ms = Date.parse(text);
  return !Number.isNaN(ms) && new Date(ms).toISOString() === text;
};

/** A pseudo-random sequence (a fixed seed), so a failure names the same texts every run. */
function* texts(count: number): Generator<string> {
  let state = 12345;
  const next = (n: number): number => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  const pad = (n: number, width: number) => String(n).padStart(width, '0');
  for (let i = 0; i < count; i++) {
    // Fields drawn past their ranges too (month 13, day 31 of 30, hour 24, second 60).
    const text =
      `${pad(next(10000), 4)}-${pad(next(14), 2)}-${pad(next(33), 2)}T` +
      `${pad(next(26), 2)}:${pad(next(62), 2)}:${pad(next(62), 2)}.${pad(next(1000), 3)}Z`;
    yield text;
  }
}

describe('isUtcIso', () => {
  it('agrees with the round trip through Date on 50,000 texts of the form, in range and not', () => {
    let accepted = 0;
    for (const text of texts(50_000)) {
      expect(isUtcIso(text), text).toBe(reference(text));
      if (isUtcIso(text)) accepted++;
    }
    // Both answers were met many times: the draw tests the check, not one side of it.
    expect(accepted).toBeGreaterThan(10_000);
    expect(accepted).toBeLessThan(40_000);
  });

  it('takes leap days as the calendar has them, and nothing Date would roll over', () => {
    for (const text of [
      '2024-02-29T23:59:59.999Z',
      '2000-02-29T00:00:00.000Z',
      '1900-02-29T00:00:00.000Z',
      '2026-02-29T00:00:00.000Z',
      '2026-02-30T00:00:00.000Z',
      '2026-04-31T00:00:00.000Z',
      '2026-01-01T24:00:00.000Z',
      '0000-01-01T00:00:00.000Z',
      '9999-12-31T23:59:59.999Z',
    ]) {
      expect(isUtcIso(text), text).toBe(reference(text));
    }
  });

  it('refuses every other form, which callers then parse', () => {
    for (const text of [
      '2026-01-01T00:00:00Z',
      '2026-01-01T00:00:00.000+00:00',
      '2026-01-01T00:00:00.0000Z',
      '2026-01-01 00:00:00.000Z',
      '2026-01-01t00:00:00.000z',
      '2026-1-01T00:00:00.000Z',
      '+02026-01-01T00:00:00.00Z',
      '2026-01-01T00:00:00.00xZ',
      '２０２６-01-01T00:00:00.000Z',
      '',
    ]) {
      expect(isUtcIso(text), text).toBe(false);
    }
  });

  it('leaves utcTimestamp answering as before: offsets made UTC, rolled-over days as Date has them', () => {
    expect(utcTimestamp('2024-06-30T20:25:46-04:00')).toBe('2024-07-01T00:25:46.000Z');
    expect(utcTimestamp('2024-06-30T20:25:46.123Z')).toBe('2024-06-30T20:25:46.123Z');
    expect(utcTimestamp('2026-02-30T00:00:00.000Z')).toBe('2026-03-02T00:00:00.000Z');
  });
});
