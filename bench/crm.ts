import { performance } from 'node:perf_hooks';
import { HubSpotDestination } from '../destinations/hubspot-destination.js';
import { setupHubSpot } from '../destinations/hubspot-setup.js';
import type { MirrorRecord } from '../destinations/record.js';
import { startHubSpotFake } from '../sandbox/crm/fakes.js';
import { DEFAULT_LIMITS } from '../sandbox/crm/hubspot/state.js';
import { fmt, type Benchmark } from './lib.js';

const LEADS = 10_000;

function lead(i: number): MirrorRecord {
  return {
    resource: 'leads',
    id: String(i),
    attributes: {
      email: `lead${i}@example.com`,
      first_name: `First${i}`,
      last_name: 'Bench',
      subject: `Wedding ${i}`,
      estimated_budget_cents: 250_000 + i,
      event_date: '2027-06-12',
    },
    raw: {},
  };
}

/**
 * Leads written into the HubSpot fake under HubSpot's default limits, through the destination
 * the mirror uses (batches of its declared size, paced by the rate headers); no Temporal and
 * no service read, so the CRM side is all that is measured.
 */
export const crmBenchmark: Benchmark = {
  name: 'crm',
  title: 'CRM destinations: leads/s into each fake under its default limits, requests per lead',
  async run(ctx) {
    const fake = await startHubSpotFake({ adminToken: 'bench-admin' });
    try {
      await setupHubSpot({ baseUrl: fake.baseUrl, token: fake.token });
      const destination = new HubSpotDestination({ baseUrl: fake.baseUrl, token: fake.token });
      await destination.ensureSchema([]);
      const before = Object.values(fake.state.counters.requests).reduce((a, b) => a + b, 0);
      const size = destination.capabilities.maxBatchSize;
      ctx.log(`hubspot: ${LEADS} leads in batches of ${size}`);
      const started = performance.now();
      const batches: Promise<unknown>[] = [];
      for (let i = 0; i < LEADS; i += size) {
        const records = Array.from({ length: Math.min(size, LEADS - i) }, (_, j) => lead(i + j));
        batches.push(destination.upsert('leads', records));
        // The mirror runs a few page activities at once per worker: four batches in flight.
        if (batches.length === 4) await Promise.all(batches.splice(0));
      }
      await Promise.all(batches);
      const seconds = (performance.now() - started) / 1000;
      const requests =
        Object.values(fake.state.counters.requests).reduce((a, b) => a + b, 0) - before;
      const limited = Object.values(fake.state.counters.rateLimited).reduce((a, b) => a + b, 0);
      return {
        method: `${fmt(LEADS, 0)} new leads written through the HubSpot destination into the in-process fake with HubSpot's default private-app limits (${DEFAULT_LIMITS.tenSecondly} calls per 10 s), four batches in flight; each lead batch is a contact upsert, a deal upsert and one association call.`,
        tables: [
          {
            head: ['CRM', 'leads', 'seconds', 'leads/s', 'requests', 'requests/lead', '429s'],
            rows: [
              [
                'HubSpot',
                fmt(LEADS, 0),
                fmt(seconds, 1),
                fmt(LEADS / seconds, 0),
                fmt(requests, 0),
                fmt(requests / LEADS, 3),
                fmt(limited, 0),
              ],
            ],
          },
        ],
        notes: [
          `Requests per lead: ${fmt(requests / LEADS, 3)}; the bound is 1/${size} per object written plus the association call, 3/${size} = ${fmt(3 / size, 3)}.`,
          `Paced from the X-HubSpot-RateLimit-* headers: the throughput ceiling is ${DEFAULT_LIMITS.tenSecondly / 10} calls/s, i.e. about ${fmt(((DEFAULT_LIMITS.tenSecondly / 10) * size) / 3, 0)} leads/s.`,
          'Pipedrive and Salesforce have no destination yet.',
        ],
      };
    } finally {
      await fake.close();
    }
  },
};
