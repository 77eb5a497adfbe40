import { describe, expect, it } from 'vitest';
import { type RateLimitSignal } from '../../workflows/rate-limit-types.js';
import { MIN_PACE, Pace, REPEAT_WINDOW_MS, RECOVERY_QUIET_MS } from '../../workflows/rate-limit.js';

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
