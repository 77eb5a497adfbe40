import { describe, expect, it, vi } from 'vitest';
import { beatingWhileAlive, heartbeatEvery } from '../../activities/heartbeats.js';

describe('heartbeatEvery', () => {
  it('sends the first call at once and then at most one a period', () => {
    let now = 10_000;
    let sent = 0;
    const beat = heartbeatEvery({ heartbeat: () => void (sent += 1) }, 1_000, () => now);
    beat();
    expect(sent).toBe(1);
    for (let i = 0; i < 50; i++) {
      now += 10;
      beat();
    }
    // 500 ms later: still the one.
    expect(sent).toBe(1);
    now += 500;
    beat();
    expect(sent).toBe(2);
    beat();
    expect(sent).toBe(2);
    now += 1_000;
    beat();
    expect(sent).toBe(3);
  });
});

describe('beatingWhileAlive', () => {
  it('beats while the activity runs and has made progress lately, and stops when it ends', async () => {
    vi.useFakeTimers();
    try {
      let sent = 0;
      const context = { heartbeat: () => void (sent += 1) };
      let finish = (): void => undefined;
      const running = beatingWhileAlive(
        () =>
          new Promise<string>((resolve) => {
            finish = () => resolve('done');
          }),
        { everyMs: 1_000, stalledAfterMs: 5_000, context: () => context },
      )();
      // Alive, with no progress yet: beats for the stall time since it started.
      await vi.advanceTimersByTimeAsync(5_000);
      expect(sent).toBe(5);
      // Stalled: no more beats, so that Temporal times the attempt out.
      await vi.advanceTimersByTimeAsync(10_000);
      expect(sent).toBe(5);
      // Progress (a beat of heartbeatEvery) brings the beats back.
      heartbeatEvery(context, 1_000)();
      expect(sent).toBe(6);
      await vi.advanceTimersByTimeAsync(3_000);
      expect(sent).toBe(9);
      finish();
      await expect(running).resolves.toBe('done');
      await vi.advanceTimersByTimeAsync(10_000);
      expect(sent).toBe(9);
    } finally {
      vi.useRealTimers();
    }
  });

  it('says in its beats that the attempt has made progress, once it has', async () => {
    vi.useFakeTimers();
    try {
      const details: unknown[] = [];
      const context = { heartbeat: (d?: unknown) => void details.push(d) };
      let finish = (): void => undefined;
      const running = beatingWhileAlive(() => new Promise<void>((resolve) => (finish = resolve)), {
        everyMs: 1_000,
        stalledAfterMs: 5_000,
        context: () => context,
      })();
      await vi.advanceTimersByTimeAsync(2_000);
      // cli/pass-retry.ts reads these: a retried attempt that reads is no longer shown retrying.
      heartbeatEvery(context, 1_000)();
      await vi.advanceTimersByTimeAsync(2_000);
      expect(details).toEqual([
        undefined,
        undefined,
        { progressed: true },
        { progressed: true },
        { progressed: true },
      ]);
      finish();
      await running;
    } finally {
      vi.useRealTimers();
    }
  });

  it('only runs the function outside an activity', async () => {
    await expect(beatingWhileAlive(() => Promise.resolve(7))()).resolves.toBe(7);
  });
});
