import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WAKE_EVERY_MS, WakeUps } from '../../webhooks/wake-ups.js';

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

  it('sends at most one per interval per connection while notices keep coming, each connection its own', async () => {
    const { sent, send } = recorder();
    const wakeUps = new WakeUps(send);
    for (let t = 0; t < 1_000; t += 10) {
      wakeUps.wake('shop', 'sqlite:a.db');
      wakeUps.wake('other', 'sqlite:b.db');
      await vi.advanceTimersByTimeAsync(10);
    }
    await vi.advanceTimersByTimeAsync(WAKE_EVERY_MS);
    for (const connectionId of ['shop', 'other']) {
      const times = sent.filter((s) => s.connectionId === connectionId).map((s) => s.at);
      expect(times.length).toBeGreaterThanOrEqual(10);
      expect(times.length).toBeLessThanOrEqual(11);
      expect(times.every((t, i) => i === 0 || t - times[i - 1]! >= WAKE_EVERY_MS)).toBe(true);
      // The last notice, at 990 ms, is covered by a wake-up after it.
      expect(times.at(-1)).toBeGreaterThanOrEqual(990);
    }
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
