import { performance } from 'node:perf_hooks';
import type { Destination } from '../destinations/destination.js';
import { HubSpotDestination } from '../destinations/hubspot-destination.js';
import { setupHubSpot } from '../destinations/hubspot-setup.js';
import { PipedriveDestination } from '../destinations/pipedrive-destination.js';
import { setupPipedrive } from '../destinations/pipedrive-setup.js';
import type { MirrorRecord } from '../destinations/record.js';
import { SalesforceDestination } from '../destinations/salesforce-destination.js';
import { startHubSpotFake, startPipedriveFake, startSalesforceFake } from '../sandbox/crm/fakes.js';
import { DEFAULT_LIMITS } from '../sandbox/crm/hubspot/state.js';
import { DEFAULT_PIPEDRIVE_LIMITS } from '../sandbox/crm/pipedrive/state.js';
import { DEFAULT_SALESFORCE_LIMITS } from '../sandbox/crm/salesforce/state.js';
import { fmt, type Benchmark, type BenchContext } from './lib.js';

const HUBSPOT_LEADS = 10_000;
// Pipedrive writes one record per call (no batch endpoints) under 80 calls per 2 s: fewer
// leads keep the run near a minute.
const PIPEDRIVE_LEADS = 600;
// Salesforce's only limit is the org's daily allocation (15,000 calls in a Developer
// Edition): 10,000 leads in collections of 200 take 50 upserts of it.
const SALESFORCE_LEADS = 10_000;

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

const sum = (counts: Record<string, number>): number =>
  Object.values(counts).reduce((a, b) => a + b, 0);

interface Measured {
  seconds: number;
  requests: number;
  limited: number;
}

/**
 * Leads written through a CRM destination in batches of its declared size, four batches in
 * flight (the mirror runs a few page activities at once per worker).
 */
async function measure(
  ctx: BenchContext,
  name: string,
  destination: Destination,
  leads: number,
  counters: () => { requests: Record<string, number>; rateLimited: Record<string, number> },
): Promise<Measured> {
  await destination.ensureSchema([]);
  const before = sum(counters().requests);
  const size = destination.capabilities.maxBatchSize;
  ctx.log(`${name}: ${leads} leads in batches of ${size}`);
  const started = performance.now();
  const batches: Promise<unknown>[] = [];
  for (let i = 0; i < leads; i += size) {
    const records = Array.from({ length: Math.min(size, leads - i) }, (_, j) => lead(i + j));
    batches.push(destination.upsert('leads', records));
    if (batches.length === 4) await Promise.all(batches.splice(0));
  }
  await Promise.all(batches);
  return {
    seconds: (performance.now() - started) / 1000,
    requests: sum(counters().requests) - before,
    limited: sum(counters().rateLimited),
  };
}

const row = (name: string, leads: number, m: Measured): string[] => [
  name,
  fmt(leads, 0),
  fmt(m.seconds, 1),
  fmt(leads / m.seconds, 0),
  fmt(m.requests, 0),
  fmt(m.requests / leads, 3),
  fmt(m.limited, 0),
];

/**
 * New leads written into each CRM fake under its vendor's default limits, through the
 * destination the mirror uses (paced by the rate headers); no Temporal and no service read,
 * so the CRM side is all that is measured.
 */
export const crmBenchmark: Benchmark = {
  name: 'crm',
  title: 'CRM destinations: leads/s into each fake under its default limits, requests per lead',
  async run(ctx) {
    const hubspot = await startHubSpotFake({ adminToken: 'bench-admin' });
    const pipedrive = await startPipedriveFake({ adminToken: 'bench-admin' });
    const salesforce = await startSalesforceFake({ adminToken: 'bench-admin' });
    try {
      await setupHubSpot({ baseUrl: hubspot.baseUrl, token: hubspot.token });
      const hs = await measure(
        ctx,
        'hubspot',
        new HubSpotDestination({ baseUrl: hubspot.baseUrl, token: hubspot.token }),
        HUBSPOT_LEADS,
        () => hubspot.state.counters,
      );
      await setupPipedrive({ baseUrl: pipedrive.baseUrl, token: pipedrive.token });
      const pd = await measure(
        ctx,
        'pipedrive',
        new PipedriveDestination({ baseUrl: pipedrive.baseUrl, token: pipedrive.token }),
        PIPEDRIVE_LEADS,
        () => pipedrive.state.counters,
      );
      const sf = await measure(
        ctx,
        'salesforce',
        new SalesforceDestination({
          loginUrl: salesforce.baseUrl,
          clientId: salesforce.clientId,
          clientSecret: salesforce.clientSecret,
          refreshToken: salesforce.token,
        }),
        SALESFORCE_LEADS,
        () => salesforce.state.counters,
      );
      const pdCeiling = DEFAULT_PIPEDRIVE_LIMITS.perWindow / 2;
      return {
        method: `New leads written through each CRM destination into its in-process fake under the vendor's default limits (HubSpot: ${DEFAULT_LIMITS.tenSecondly} calls per 10 s, private app; Pipedrive: ${DEFAULT_PIPEDRIVE_LIMITS.perWindow} calls per 2 s, Professional plan api_token; Salesforce: ${DEFAULT_SALESFORCE_LIMITS.dailyApiRequests} calls per rolling 24 h, Developer Edition), four batches in flight. HubSpot: a contact upsert, a deal upsert and one association call per batch of 100. Pipedrive has no batch writes: per new lead a person search, a person create, a deal search (by ebs_lead_id) and a deal create. Salesforce: one Lead upsert by EBS_Lead_Id__c per collection of 200; the three describe calls that check the org's fields once come before the clock starts, like HubSpot's and Pipedrive's schema checks.`,
        tables: [
          {
            head: ['CRM', 'leads', 'seconds', 'leads/s', 'requests', 'requests/lead', '429s'],
            rows: [
              row('HubSpot', HUBSPOT_LEADS, hs),
              row('Pipedrive', PIPEDRIVE_LEADS, pd),
              row('Salesforce', SALESFORCE_LEADS, sf),
            ],
          },
        ],
        notes: [
          `HubSpot requests per lead: ${fmt(hs.requests / HUBSPOT_LEADS, 3)}; the bound is 1/100 per object written plus the association call, 3/100 = 0.030. Ceiling ${DEFAULT_LIMITS.tenSecondly / 10} calls/s, about ${fmt(((DEFAULT_LIMITS.tenSecondly / 10) * 100) / 3, 0)} leads/s.`,
          `Pipedrive requests per lead: ${fmt(pd.requests / PIPEDRIVE_LEADS, 3)} (4 for a new lead; 2 PATCHes for a changed one, found by the ids the ledger keeps). Ceiling ${pdCeiling} calls/s, about ${fmt(pdCeiling / 4, 0)} new leads/s.`,
          `Salesforce requests per lead: ${fmt(sf.requests / SALESFORCE_LEADS, 3)}; the bound is 1/200 = 0.005. Salesforce has no per-second limit: the rate is the fake's and the network's; the org's daily allocation of ${DEFAULT_SALESFORCE_LIMITS.dailyApiRequests} calls would take about ${fmt(DEFAULT_SALESFORCE_LIMITS.dailyApiRequests * 0.95 * 200, 0)} new leads a day before ebsync stops at 95% of it.`,
        ],
      };
    } finally {
      await hubspot.close();
      await pipedrive.close();
      await salesforce.close();
    }
  },
};
