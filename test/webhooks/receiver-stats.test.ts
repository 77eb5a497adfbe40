import { describe, expect, it } from 'vitest';
import {
  latencyQuantile,
  ReceiverStatsRecorder,
  receiverStatsSchema,
} from '../../webhooks/receiver-stats.js';

/** The counters the status page shows of the receiver: what each answer counts as. */
describe('receiver stats', () => {
  it('counts 2xx as delivered with latency, 4xx as rejected, 503 as failed, by minute', () => {
    const stats = new ReceiverStatsRecorder();
    const t0 = Date.UTC(2026, 0, 1, 12, 0, 30);
    stats.record(200, 8, t0);
    stats.record(200, 40, t0 + 1_000);
    stats.record(401, 1, t0 + 2_000);
    stats.record(503, 5_000, t0 + 3_000);
    stats.record(200, 20_000, t0 + 60_000);
    const snap = receiverStatsSchema.parse(stats.snapshot(t0 + 61_000));
    expect([snap.delivered, snap.rejected, snap.failed]).toEqual([3, 1, 1]);
    expect(snap.minutes).toEqual([
      [Date.UTC(2026, 0, 1, 12, 0), 2, 1, 24],
      [Date.UTC(2026, 0, 1, 12, 1), 1, 0, 20_000],
    ]);
    // Buckets: 8 ms ≤ 10, 40 ms ≤ 50, 20 s past the last bound.
    expect(latencyQuantile(snap, 0.5)).toBe(50);
    expect(latencyQuantile(snap, 0.95)).toBe(10_000);
  });

  it('keeps the last hour only, and has no latency before a delivery', () => {
    const stats = new ReceiverStatsRecorder();
    const t0 = Date.UTC(2026, 0, 1, 12);
    stats.record(404, 1, t0);
    const later = stats.snapshot(t0 + 2 * 3_600_000);
    expect(later.minutes).toEqual([]);
    expect(later.rejected).toBe(1);
    expect(latencyQuantile(later, 0.5)).toBeNull();
  });

  it('counts the 503s of the last 15 minutes apart, and when the last was', () => {
    const stats = new ReceiverStatsRecorder();
    const t0 = Date.UTC(2026, 0, 1, 12);
    stats.record(503, 5, t0);
    stats.record(503, 5, t0 + 20 * 60_000);
    stats.record(503, 5, t0 + 21 * 60_000);
    const snap = receiverStatsSchema.parse(stats.snapshot(t0 + 30 * 60_000));
    expect([snap.failed, snap.failedRecently, snap.lastFailedAt]).toEqual([3, 2, t0 + 21 * 60_000]);
    expect(stats.snapshot(t0 + 50 * 60_000).failedRecently).toBe(0);
  });
});
