import { describe, expect, it } from 'vitest';
import { waitForResetMs } from '../../workflows/destination-pause.js';

const now = Date.parse('2026-12-07T22:00:00Z');
const bounds = { floorMs: 30_000, capMs: 60 * 60_000 };

describe("a paused drain's wait for its destination's reset", () => {
  it('lasts until the reset when it is within the bound', () => {
    expect(waitForResetMs('2026-12-07T22:20:00.000Z', now, bounds)).toBe(20 * 60_000);
  });

  it('lasts the bound at most when the reset is further', () => {
    expect(waitForResetMs('2026-12-08T00:00:00.000Z', now, bounds)).toBe(60 * 60_000);
  });

  it('lasts the floor at least: a reset past by this clock, or not said, is not tried at once', () => {
    expect(waitForResetMs('2026-12-07T21:59:50.000Z', now, bounds)).toBe(30_000);
    expect(waitForResetMs('2026-12-07T22:00:10.000Z', now, bounds)).toBe(30_000);
    expect(waitForResetMs('the reset', now, bounds)).toBe(30_000);
  });
});
