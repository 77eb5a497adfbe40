import { describe, expect, it } from 'vitest';
import { type RateLimitSignal } from '../../workflows/rate-limit-types.js';
import {
  CEILING_MARGIN,
  MIN_PACE,
  Pace,
  REPEAT_WINDOW_MS,
  RECOVERY_QUIET_MS,
} from '../../workflows/rate-limit.js';

const refusal = (at: number, count?: number): RateLimitSignal => ({
  at,
  status: 429,
  retryAfterMs: 1_000,
  operation: 'leads.list',
  ...(count === undefined ? {} : { count }),
});

describe('the pace of a connection after refusals', () => {
  it('keeps its full rate after a lone refusal, which the Retry-After hold answers', () => {
    const pace = new Pace('c1', { cutOnRepeat: true });
    pace.onLimit(refusal(0), 0);
    expect(pace.share(1)).toBe(1);
    expect(pace.last?.operation).toBe('leads.list');
    // Another lone one, long after: still no cut.
    pace.onLimit(refusal(REPEAT_WINDOW_MS + 1), REPEAT_WINDOW_MS + 1);
    expect(pace.share(REPEAT_WINDOW_MS + 2)).toBe(1);
  });

  it('halves on a second refusal within the repeat window, and on a signal counting several', () => {
    const repeated = new Pace('c1', { cutOnRepeat: true });
    repeated.onLimit(refusal(0), 0);
    repeated.onLimit(refusal(5_000), 5_000);
    expect(repeated.share(5_001)).toBe(0.5);

    const burst = new Pace('c2', { cutOnRepeat: true });
    burst.onLimit(refusal(0, 3), 0);
    expect(burst.share(1)).toBe(0.5);
  });

  it('counts refusals within one Retry-After as one cut, down to the slowest pace at most', () => {
    const pace = new Pace('c1', { cutOnRepeat: true });
    pace.onLimit(refusal(0, 2), 0);
    pace.onLimit(refusal(500, 2), 500);
    expect(pace.share(600)).toBe(0.5);
    for (let t = 1_000; t <= 20_000; t += 1_000) pace.onLimit(refusal(t, 2), t);
    expect(pace.share(20_001)).toBe(MIN_PACE);
  });

  it('climbs back to its full rate once the service is quiet', () => {
    const pace = new Pace('c1', { cutOnRepeat: true });
    pace.onLimit(refusal(0, 2), 0);
    expect(pace.share(RECOVERY_QUIET_MS - 1)).toBe(0.5);
    expect(pace.share(RECOVERY_QUIET_MS + 60_000)).toBe(1);
  });

  it('answers a query with the share it has without moving it (peek)', () => {
    const peeked = new Pace('c1', { cutOnRepeat: true });
    const shared = new Pace('c1', { cutOnRepeat: true });
    for (const pace of [peeked, shared]) {
      pace.onLimit(refusal(0, 2), 0);
      pace.onLimit(refusal(2_000, 2), 2_000);
    }
    expect(peeked.peek(3_000)).toBe(0.25);
    // Queried all along the recovery, it ends where one never queried does.
    for (let t = 3_000; t <= 30_000; t += 700) {
      expect(peeked.peek(t)).toBe(shared.share(t));
    }
    expect(peeked.share(30_000)).toBe(shared.share(30_000));
    expect(peeked.peek(RECOVERY_QUIET_MS + 60_000)).toBe(1);
  });

  it('halves on every refusal in passes begun before lone refusals stopped cutting (replay)', () => {
    const pace = new Pace('c1');
    pace.onLimit(refusal(0), 0);
    expect(pace.share(1)).toBe(0.5);
  });
});

describe('a pace that learns the ceiling the service turned it away at', () => {
  const learning = (): Pace => new Pace('c1', { cutOnRepeat: true, learnCeiling: true });
  /** The share at each 2-second step from `from` for `steps` steps. */
  const climb = (pace: Pace, from: number, steps: number): number[] =>
    Array.from({ length: steps }, (_, i) => pace.share(from + (i + 1) * 2_000));

  it('climbs quickly to just under the pace refused, then slowly, and reaches the full rate', () => {
    const pace = learning();
    pace.onLimit(refusal(0, 2), 0);
    expect(pace.share(1)).toBe(0.5);
    // The first step is due once the service has been quiet RECOVERY_QUIET_MS.
    const shares = climb(pace, RECOVERY_QUIET_MS - 2_000, 40);
    // Quick steps (a quarter each) up to CEILING_MARGIN of the refused full rate…
    expect(shares.slice(0, 3)).toEqual([0.625, 0.78125, CEILING_MARGIN]);
    // …then small ones, never a quick one again, up to the full rate.
    for (let i = 3; i < shares.length; i++) {
      expect(shares[i]! / shares[i - 1]!).toBeLessThanOrEqual(1.0300001);
    }
    expect(shares.at(-1)).toBe(1);
  });

  it('refused again while climbing, stays under that lower pace instead of the full rate', () => {
    const pace = learning();
    pace.onLimit(refusal(0, 2), 0);
    // Climbed to 0.625 after the quiet, then refused again there.
    expect(pace.share(RECOVERY_QUIET_MS)).toBe(0.625);
    const at = RECOVERY_QUIET_MS + 1_000;
    pace.onLimit(refusal(at, 2), at);
    expect(pace.share(at + 1)).toBe(0.3125);
    const shares = climb(pace, at + RECOVERY_QUIET_MS - 2_000, 6);
    // Quickly back to 0.9 × 0.625, then no faster than 3 % a step: the sawtooth of the full
    // climb (0.3125 up to 1 and down again) is gone.
    expect(shares.filter((s) => s <= 0.625 * CEILING_MARGIN + 1e-9).at(-1)).toBeCloseTo(0.5625, 9);
    expect(Math.max(...shares)).toBeLessThan(0.625);
  });

  it('refused in its slow climb, cuts to just under that pace; refused again at once, halves', () => {
    const pace = learning();
    pace.onLimit(refusal(0, 2), 0);
    // Quiet: quick up to 0.9, then 0.927 in the slow climb, where it is refused.
    const at = RECOVERY_QUIET_MS + 6_000;
    expect(pace.share(at)).toBeCloseTo(0.927, 9);
    pace.onLimit(refusal(at, 2), at);
    expect(pace.share(at + 1)).toBeCloseTo(0.927 * CEILING_MARGIN, 9);
    // Refused again before it climbs: the limit dropped, and the pace halves.
    pace.onLimit(refusal(at + 2_000, 2), at + 2_000);
    expect(pace.share(at + 2_001)).toBeCloseTo((0.927 * CEILING_MARGIN) / 2, 9);
  });

  it('answers a query with the share it would climb to, without moving it', () => {
    const peeked = learning();
    const shared = learning();
    for (const pace of [peeked, shared]) pace.onLimit(refusal(0, 2), 0);
    for (let t = 1_000; t <= 90_000; t += 700) expect(peeked.peek(t)).toBe(shared.share(t));
  });

  it('carries into a run continued as new, through JSON, and goes on as if never stopped', () => {
    const before = learning();
    const unbroken = learning();
    for (const pace of [before, unbroken]) {
      pace.onLimit(refusal(0, 2), 0);
      pace.share(RECOVERY_QUIET_MS + 2_000);
      pace.onLimit(refusal(RECOVERY_QUIET_MS + 3_000, 2), RECOVERY_QUIET_MS + 3_000);
    }
    const carried = JSON.parse(JSON.stringify(before.state())) as ReturnType<Pace['state']>;
    const after = new Pace('c1', { cutOnRepeat: true, learnCeiling: true }, carried);
    for (let t = RECOVERY_QUIET_MS + 4_000; t <= 120_000; t += 1_500) {
      expect(after.share(t)).toBe(unbroken.share(t));
    }
    // A fresh pace (what a continued run had before) starts at the full rate.
    expect(learning().share(RECOVERY_QUIET_MS + 4_000)).toBe(1);
  });
});
