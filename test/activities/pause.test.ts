import { describe, expect, it } from 'vitest';
import { pause } from '../../activities/pause.js';

const timers = (): number =>
  process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

describe('pause', () => {
  it('ends when a promise it waits on settles, and leaves no timer to hold the process', async () => {
    const before = timers();
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    const paused = pause(60_000, { until: [done] });
    expect(timers()).toBe(before + 1);
    settle();
    await paused;
    expect(timers()).toBe(before);
  });

  it('ends on a rejection too: settling is the wake-up', async () => {
    const before = timers();
    const failed = Promise.reject(new Error('the pass failed'));
    failed.catch(() => undefined);
    await pause(60_000, { until: [failed] });
    expect(timers()).toBe(before);
  });

  it('ends when its signal aborts, and takes its listener off the signal', async () => {
    const before = timers();
    const controller = new AbortController();
    let listeners = 0;
    const add = controller.signal.addEventListener.bind(controller.signal);
    const remove = controller.signal.removeEventListener.bind(controller.signal);
    controller.signal.addEventListener = (...args: Parameters<typeof add>) => {
      listeners += 1;
      add(...args);
    };
    controller.signal.removeEventListener = (...args: Parameters<typeof remove>) => {
      listeners -= 1;
      remove(...args);
    };
    // Pauses that run out leave no listener behind on the signal they shared.
    for (let i = 0; i < 3; i++) await pause(1, { signal: controller.signal });
    expect(listeners).toBe(0);
    const paused = pause(60_000, { signal: controller.signal });
    controller.abort();
    await paused;
    expect(listeners).toBe(0);
    expect(timers()).toBe(before);
    // Already aborted: no wait at all.
    await pause(60_000, { signal: controller.signal });
    expect(timers()).toBe(before);
  });

  it('waits its time when nothing wakes it', async () => {
    const started = performance.now();
    await pause(50, { until: [new Promise(() => undefined)] });
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
  });
});
