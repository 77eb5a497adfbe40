import { describe, expect, it, vi } from 'vitest';
import { beatingWhileAlive, heartbeatEvery, slotWaitBeats } from '../../activities/heartbeats.js';

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

  /**
   * An activity run under beatingWhileAlive (a beat a second, stalled after 5 s) on fake
   * timers, the details of each beat it sent kept: `body` drives it, then it ends.
   */
  async function beatsOf(
    body: (context: { heartbeat(d?: unknown): void }, details: unknown[]) => Promise<void>,
  ): Promise<void> {
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
      await body(context, details);
      finish();
      await running;
    } finally {
      vi.useRealTimers();
    }
  }

  it('says in its beats that the attempt has made progress, once it has', async () => {
    await beatsOf(async (context, details) => {
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
    });
  });

  it('says in its beats that a request waits for its rate slot, which is no progress', async () => {
    await beatsOf(async (context, details) => {
      const until = Date.now() + 60_000;
      const wait = slotWaitBeats(context, until);
      // A wait keeps the attempt alive past the stall time, but says it waits, not progressed.
      await vi.advanceTimersByTimeAsync(6_000);
      wait.beat();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(details.length).toBeGreaterThanOrEqual(7);
      expect(
        details.filter((d) => JSON.stringify(d) !== JSON.stringify({ slotWaitUntil: until })),
      ).toEqual([]);
      wait.done();
      details.length = 0;
      heartbeatEvery(context, 1_000)();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(details).toEqual([{ progressed: true }, { progressed: true }]);
      // A wait at the pace itself (a slot a fraction of a second away) sends no beat of its own.
      details.length = 0;
      slotWaitBeats(context, Date.now() + 100).beat();
      expect(details).toEqual([]);
    });
  });

  it('only runs the function outside an activity', async () => {
    await expect(beatingWhileAlive(() => Promise.resolve(7))()).resolves.toBe(7);
  });
});
