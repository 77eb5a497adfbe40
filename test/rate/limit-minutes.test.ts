import { describe, expect, it } from 'vitest';
import { type RateLimitSignal } from '../../workflows/rate-limit-types.js';
import { countLimit } from '../../workflows/rate-limit.js';

/** How the connection workflow counts refusals for "429s last hour". */
const at = (iso: string, count?: number): RateLimitSignal => ({
  at: Date.parse(iso),
  status: 429,
  retryAfterMs: 1_000,
  operation: 'leads.list',
  ...(count === undefined ? {} : { count }),
});
const minute = (iso: string): number => Date.parse(iso);

describe('429s per minute', () => {
  it('counts each refusal a signal stands for in its minute', () => {
    let minutes = countLimit([], at('2026-11-22T10:00:05Z'));
    minutes = countLimit(minutes, at('2026-11-22T10:00:59Z', 4));
    minutes = countLimit(minutes, at('2026-11-22T10:01:00Z', 2));
    expect(minutes).toEqual([
      [minute('2026-11-22T10:00:00Z'), 5],
      [minute('2026-11-22T10:01:00Z'), 2],
    ]);
  });

  it('forgets minutes more than an hour before the newest refusal', () => {
    let minutes = countLimit([], at('2026-11-22T10:00:30Z', 3));
    minutes = countLimit(minutes, at('2026-11-22T10:30:00Z'));
    minutes = countLimit(minutes, at('2026-11-22T11:00:10Z'));
    expect(minutes).toEqual([
      [minute('2026-11-22T10:30:00Z'), 1],
      [minute('2026-11-22T11:00:00Z'), 1],
    ]);
  });
});
