import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WAKE_EVERY_MS, WAKE_STREAMING_MS, WakeUps } from '../../webhooks/wake-ups.js';

/** The wake-ups a receiver sends: at most one per connection per interval, none lost. */
describe('drain wake-ups', () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());

  function recorder(fail = 0) {
    const sent: { connectionId: string; destination: string; at: number }[] = [];
    let failures = fail;
    const send = (connectionId: string, destination: string): Promise<void> => {
      if (failures > 0) {
        failures -= 1;
        return Promise.reject(new Error('Temporal is away'));
      }
      sent.push({ connectionId, destination, at: Date.now() });
      return Promise.resolve();
    };
    return { sent, send };
  }

  it('wakes at once, and the burst after it with one more at the end of the interval', async () => {
    const { sent, send } = recorder();
    const wakeUps = new WakeUps(send);
    for (let i = 0; i < 50; i += 1) wakeUps.wake('shop', 'sqlite:a.db');
    await vi.advanceTimersByTimeAsync(0);
    expect(sent.map((s) => s.at)).toEqual([0]);
    await vi.advanceTimersByTimeAsync(WAKE_EVERY_MS);
    expect(sent.map((s) => s.at)).toEqual([0, WAKE_EVERY_MS]);
    // Nothing owed: nothing more.
    await vi.advanceTimersByTimeAsync(10 * WAKE_EVERY_MS);
    expect(sent).toHaveLength(2);
    wakeUps.close();
  });

  it('spaces wake-ups WAKE_STREAMING_MS apart while notices keep coming, each connection its own', async () => {
    const { sent, send } = recorder();
    const wakeUps = new WakeUps(send);
    for (let t = 0; t < 1_000; t += 10) {
      wakeUps.wake('shop', 'sqlite:a.db');
      wakeUps.wake('other', 'sqlite:b.db');
      await vi.advanceTimersByTimeAsync(10);
    }
    await vi.advanceTimersByTimeAsync(WAKE_STREAMING_MS);
    for (const connectionId of ['shop', 'other']) {
      const times = sent.filter((s) => s.connectionId === connectionId).map((s) => s.at);
      // At once, at the end of the first interval, then one per streaming interval.
      expect(times.slice(0, 3)).toEqual([0, WAKE_EVERY_MS, WAKE_EVERY_MS + WAKE_STREAMING_MS]);
      expect(times.every((t, i) => i < 2 || t - times[i - 1]! >= WAKE_STREAMING_MS)).toBe(true);
      expect(times.length).toBeLessThanOrEqual(2 + Math.ceil(1_000 / WAKE_STREAMING_MS));
      // The last notice, at 990 ms, is covered by a wake-up after it.
      expect(times.at(-1)).toBeGreaterThanOrEqual(990);
    }
    wakeUps.close();
  });

  it('wakes at once for each notice of a sparse stream, and again after a stream ends', async () => {
    const { sent, send } = recorder();
    const wakeUps = new WakeUps(send);
    // One notice every 1.5 intervals: none waits for the one before.
    for (let i = 0; i < 5; i += 1) {
      wakeUps.wake('shop', 'sqlite:a.db');
      await vi.advanceTimersByTimeAsync(WAKE_EVERY_MS * 1.5);
    }
    expect(sent.map((s) => s.at)).toEqual([0, 1, 2, 3, 4].map((i) => i * WAKE_EVERY_MS * 1.5));
    // A burst makes a stream; after a quiet spell the next notice wakes at once again.
    sent.length = 0;
    const burst = Date.now();
    for (let i = 0; i < 20; i += 1) {
      wakeUps.wake('shop', 'sqlite:a.db');
      await vi.advanceTimersByTimeAsync(10);
    }
    await vi.advanceTimersByTimeAsync(2 * WAKE_STREAMING_MS);
    const quiet = Date.now();
    wakeUps.wake('shop', 'sqlite:a.db');
    await vi.advanceTimersByTimeAsync(0);
    expect(sent.map((s) => s.at - burst)).toEqual([
      0,
      WAKE_EVERY_MS,
      WAKE_EVERY_MS + WAKE_STREAMING_MS,
      quiet - burst,
    ]);
    wakeUps.close();
  });

  it('tries a failed wake-up again, backing off, with the latest destination', async () => {
    const { sent, send } = recorder(2);
    const errors: string[] = [];
    const wakeUps = new WakeUps(send, (connectionId, error) =>
      errors.push(`${connectionId}: ${(error as Error).message}`),
    );
    wakeUps.wake('shop', 'sqlite:a.db');
    await vi.advanceTimersByTimeAsync(0);
    wakeUps.wake('shop', 'sqlite:moved.db');
    await vi.advanceTimersByTimeAsync(900);
    expect(sent).toEqual([]);
    // 1 s after the first failure, then 2 s after the second.
    await vi.advanceTimersByTimeAsync(3_200);
    expect(errors).toEqual(['shop: Temporal is away', 'shop: Temporal is away']);
    expect(sent).toEqual([{ connectionId: 'shop', destination: 'sqlite:moved.db', at: 3_000 }]);
    wakeUps.close();
  });
});
