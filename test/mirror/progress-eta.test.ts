import { describe, expect, it } from 'vitest';
import { progressLine } from '../../cli/sync.js';
import { emptyCounts, etaOf, type MirrorProgress } from '../../workflows/mirror-types.js';

describe("a mirror pass's ETA", () => {
  it('is the records left at the rate so far, counting unreachable ones as settled', () => {
    const counts = { ...emptyCounts(), expected: 1000, read: 500 };
    expect(etaOf(counts, false, 100)).toBe(5_000);
    expect(etaOf({ ...counts, unreachable: 100 }, false, 100)).toBe(4_000);
    expect(etaOf(counts, true, 100)).toBe(0);
  });

  it('is unknown, not 0, while the pass goes on past what the lists counted (events read by id)', () => {
    const counts = { ...emptyCounts(), expected: 3475, read: 3475, written: 3475 };
    expect(etaOf(counts, false, 524.6)).toBeNull();
    expect(etaOf({ ...counts, read: 3600 }, false, 524.6)).toBeNull();
    // Before anything is read or counted there is no rate to go by either.
    expect(etaOf(emptyCounts(), false, 0)).toBeNull();
    const progress: MirrorProgress = {
      connectionId: 'demo',
      destination: 'sqlite:mirror.db',
      mode: 'incremental',
      subjects: ['events'],
      phase: 'reading',
      passId: 'p#1',
      generation: 1,
      startedAt: 0,
      elapsedMs: 6_000,
      partitions: { total: 4, done: 3 },
      counts,
      gaps: [],
      refusals: [],
      ratePerSecond: 524.6,
      etaMs: etaOf(counts, false, 524.6),
      error: null,
    };
    expect(progressLine(progress)).not.toContain('ETA');
  });
});
