import { describe, expect, it } from 'vitest';
import { heartbeatEvery } from '../../activities/heartbeats.js';

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
