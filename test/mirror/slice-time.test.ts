import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../sandbox/server.js';
import { driveMirrorPass } from '../helpers/mirror-driver.js';
import { sandboxClient } from '../helpers/sandbox.js';

/**
 * A pass's progress moves when an activity returns. Against a slow service an activity of a
 * full page budget read for most of a minute while its rows were written, and the progress
 * stood still; MirrorDeps.sliceMs ends an activity's slice after that long instead, and the
 * next activity goes on from its cursor.
 */
describe('slices of pages ended by time', () => {
  it('reads every lead once, whether the page budget or the time ends the slices', async () => {
    const sb = await startSandbox({
      http: true,
      seed: { leads: 1_200, events: 0, seed: 'slices' },
    });
    try {
      // Slower than the cut's 100 ms: its slices start only the pages of their first fill.
      sb.admin.setFaults({ latencyMs: 150 });
      const pass = (sliceMs: number) =>
        driveMirrorPass({
          client: sandboxClient(sb),
          subjects: ['leads'],
          reachLimit: 10_000,
          per: 50,
          sliceMs,
        });
      const whole = await pass(600_000);
      const cut = await pass(100);

      const leads = whole.written.get('leads');
      expect(leads?.size).toBe(1_200);
      expect(cut.partitions.leads?.activities).toBeGreaterThan(
        (whole.partitions.leads?.activities ?? 0) + 1,
      );
      expect([...(cut.written.get('leads')?.keys() ?? [])].sort()).toEqual(
        [...(leads?.keys() ?? [])].sort(),
      );
      for (const hashes of cut.written.get('leads')?.values() ?? []) expect(hashes.size).toBe(1);
      expect(cut.requests['leads.list']).toBe(whole.requests['leads.list']);
      expect(cut.seen).toEqual(whole.seen);
      expect(cut.partitions.leads?.tally.read).toBe(whole.partitions.leads?.tally.read);
      expect(cut.gaps).toEqual([]);
    } finally {
      await sb.close();
    }
  }, 120_000);
});
