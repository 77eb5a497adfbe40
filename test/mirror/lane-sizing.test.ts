import { describe, expect, it } from 'vitest';
import { LaneSizer, type LaneBounds } from '../../activities/mirror/lane-sizing.js';
import { apiKeyAuth, createClient } from '../../api/index.js';
import { startSandbox } from '../../sandbox/server.js';
import { driveMirrorPass } from '../helpers/mirror-driver.js';

/** A sizer on a clock and a meter the test sets. */
function sizer(bounds: LaneBounds) {
  let now = 0;
  let busy = 0;
  const lanes = new LaneSizer(
    bounds,
    () => busy,
    () => now,
  );
  return {
    lanes,
    /**
     * One window of `ms` (300 by default) at this busy share, the writer busy `wroteMs` of it,
     * ending with an arrival; pages held back or not.
     */
    window(share: number, held: boolean, wroteMs = 0, ms = 300): number | undefined {
      busy = share;
      now += ms;
      if (held) lanes.heldBack();
      lanes.wrote(wroteMs);
      return lanes.arrived();
    },
  };
}

describe('pages in flight, sized from what the slice measures', () => {
  it('doubles while pages are held back and the process waits, up to the maximum', () => {
    const s = sizer({ start: 4, min: 4, max: 16 });
    expect(s.lanes.lanes).toBe(4);
    expect(s.window(0.1, true)).toBe(8);
    expect(s.window(0.2, true)).toBe(16);
    expect(s.window(0.1, true)).toBeUndefined();
    expect(s.lanes.lanes).toBe(16);
  });

  it('stays at the start when the process is busy, or when nothing was held back', () => {
    const s = sizer({ start: 4, min: 4, max: 16 });
    expect(s.window(0.95, true)).toBeUndefined();
    expect(s.window(0.1, false)).toBeUndefined();
    expect(s.lanes.lanes).toBe(4);
  });

  it('does not grow while the writer sets the pace, and halves then', () => {
    const s = sizer({ start: 8, min: 4, max: 16 });
    // An idle loop waiting on a database: the writer busy 80 % of the window.
    expect(s.window(0.1, true, 240)).toBe(4);
    // The writer keeps up again: pages held back grow the lanes.
    expect(s.window(0.1, true, 30)).toBe(8);
  });

  it('decides once per window, not on every arrival', () => {
    const s = sizer({ start: 2, min: 2, max: 8 });
    expect(s.window(0, true, 0, 100)).toBeUndefined();
    expect(s.window(0, true, 0, 160)).toBe(4);
  });

  it('halves while the process is busy throughout, never below the least', () => {
    const s = sizer({ start: 16, min: 4, max: 16 });
    expect(s.window(0.95, false)).toBe(8);
    expect(s.window(0.95, false)).toBe(4);
    expect(s.window(0.95, false)).toBeUndefined();
    // Between the two bounds of busy time nothing changes, held back or not.
    expect(s.window(0.7, true)).toBeUndefined();
    expect(s.lanes.lanes).toBe(4);
  });

  it('never grows past a maximum equal to the start (a paced connection)', () => {
    const s = sizer({ start: 4, min: 4, max: 4 });
    expect(s.window(0, true)).toBeUndefined();
    expect(s.lanes.lanes).toBe(4);
  });

  it('keeps more pages in flight against a slow service, and reads the same leads', async () => {
    const sb = await startSandbox({
      http: true,
      seed: { leads: 3_000, events: 0, seed: 'lanes' },
    });
    try {
      sb.admin.setFaults({ latencyMs: 150 });
      const inFlightOf = async (maxPagesInFlight: number) => {
        const client = createClient({
          baseUrl: sb.baseUrl,
          auth: apiKeyAuth(sb.apiKey),
          allowInsecureLoopback: true,
        });
        let now = 0;
        let most = 0;
        const call = client.transport.call.bind(client.transport);
        client.transport.call = async (operation, request) => {
          if (operation !== 'leads.list') return call(operation, request);
          most = Math.max(most, ++now);
          try {
            return await call(operation, request);
          } finally {
            now -= 1;
          }
        };
        const pass = await driveMirrorPass({
          client,
          subjects: ['leads'],
          reachLimit: 10_000,
          per: 100,
          pagesInFlight: 4,
          maxPagesInFlight,
        });
        return { most, leads: pass.written.get('leads')?.size ?? 0 };
      };
      const fixed = await inFlightOf(4);
      const sized = await inFlightOf(16);
      expect(fixed).toEqual({ most: 4, leads: 3_000 });
      expect(sized.leads).toBe(3_000);
      expect(sized.most).toBeGreaterThan(4);
      expect(sized.most).toBeLessThanOrEqual(16);
    } finally {
      await sb.close();
    }
  }, 120_000);
});
