import { describe, expect, it } from 'vitest';
import { apiKeyAuth, createClient } from '../../api/index.js';
import { startSandbox } from '../../sandbox/server.js';
import { driveMirrorPass } from '../helpers/mirror-driver.js';

/**
 * The events a page of event bookings names are read one request each. An activity stops
 * asking after MirrorDeps.readByIdMs and hands back what it read, so the pass's progress moves
 * while they are read (it moves as activities return); the next activity asks for the rest.
 */
describe('reads by id spread over activities', () => {
  it('reads every event once, whether one activity reads them all or several share them', async () => {
    const sb = await startSandbox({ http: true, seed: { leads: 0, events: 120, seed: 'by-id' } });
    try {
      // Slow enough that 120 reads (four at a time) take about a second.
      sb.admin.setFaults({ latencyMs: 30 });
      const pass = async (readByIdMs: number | undefined) => {
        const client = createClient({
          baseUrl: sb.baseUrl,
          auth: apiKeyAuth(sb.apiKey),
          allowInsecureLoopback: true,
        });
        return driveMirrorPass({
          client,
          subjects: ['events'],
          reachLimit: 10_000,
          per: 100,
          ...(readByIdMs !== undefined ? { readByIdMs } : {}),
        });
      };
      const whole = await pass(undefined);
      const cut = await pass(150);

      const events = whole.written.get('events');
      expect(events?.size).toBe(120);
      expect(whole.partitions.event_bookings?.activities).toBe(1);
      // Cut: more activities, and the same events, each read once and written once.
      expect(cut.partitions.event_bookings?.activities).toBeGreaterThan(2);
      expect([...(cut.written.get('events')?.keys() ?? [])].sort()).toEqual(
        [...(events?.keys() ?? [])].sort(),
      );
      expect(cut.requests['events.get']).toBe(120);
      expect(whole.requests['events.get']).toBe(120);
      for (const hashes of cut.written.get('events')?.values() ?? []) expect(hashes.size).toBe(1);
      expect(cut.seen).toEqual(whole.seen);
      // The counts add up as in one activity: read = the bookings the list counted + the events.
      expect(cut.partitions.event_bookings?.tally.read).toBe(
        whole.partitions.event_bookings?.tally.read,
      );
      expect(cut.partitions.event_bookings?.expected).toBe(
        whole.partitions.event_bookings?.expected,
      );
      expect(cut.gaps).toEqual([]);
    } finally {
      await sb.close();
    }
  }, 120_000);
});
