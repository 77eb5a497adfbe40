import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyAuth, createClient } from '../../api/index.js';
import { createMirrorActivities, type MirrorDeps } from '../../activities/mirror/pass.js';
import type { Destination } from '../../destinations/destination.js';
import { openDestination } from '../../destinations/open-destination.js';
import { setupPipedrive } from '../../destinations/pipedrive-setup.js';
import type { Ledger } from '../../store/ledger.js';
import { openLedger } from '../../store/open-ledger.js';
import { startPipedriveFake, type PipedriveFake } from '../../sandbox/crm/fakes.js';
import type { PipedriveRecord } from '../../sandbox/crm/pipedrive/state.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import type { MirrorInput, MirrorSummary } from '../../workflows/mirror-types.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { sourceIds } from '../mirror/source-truth.js';

const LEADS = 2000;
const EVENTS = 300;
const REACH = 10_000;
/** This file's connection name: no other test file uses it. */
const CONNECTION = 'crm-pipedrive';

let ts: TestSandbox;
let dir: string;
let temporal: TemporalHarness;
const fakes: PipedriveFake[] = [];
const ledgers: Ledger[] = [];
const destinations: Destination[] = [];

async function newFake(): Promise<PipedriveFake> {
  const fake = await startPipedriveFake({ adminToken: 'admin-token-for-tests' });
  fakes.push(fake);
  return fake;
}

/** Mirror deps whose `pipedrive` destination is this fake, with a ledger of its own. */
function depsFor(fake: PipedriveFake): MirrorDeps {
  let ledger: Promise<Ledger> | undefined;
  let destination: Destination | undefined;
  return {
    clientFor: () =>
      Promise.resolve(
        createClient({
          baseUrl: ts.sb.baseUrl,
          auth: apiKeyAuth(ts.sb.apiKey),
          allowInsecureLoopback: true,
        }),
      ),
    ledger: () =>
      (ledger ??= openLedger(
        `sqlite:${join(dir, `ledger-${ledgers.length}-${Math.random()}.db`)}`,
      ).then((l) => {
        ledgers.push(l);
        return l;
      })),
    destination: (target) => {
      if (!destination) {
        destination = openDestination(target, {
          pipedrive: { baseUrl: fake.baseUrl, token: fake.token },
        });
        destinations.push(destination);
      }
      return Promise.resolve(destination);
    },
    reachLimit: REACH,
    per: 100,
  };
}

async function runPass(
  deps: MirrorDeps,
  input: Omit<MirrorInput, 'connectionId' | 'destination'>,
): Promise<MirrorSummary> {
  const taskQueue = temporal.taskQueue();
  return temporal.withWorker(
    { taskQueue, activities: createMirrorActivities(deps), maxConcurrentActivityTaskExecutions: 8 },
    () =>
      temporal.client.workflow.execute(mirrorWorkflow, {
        taskQueue,
        workflowId: `mirror-${CONNECTION}-${taskQueue}`,
        args: [{ connectionId: CONNECTION, destination: 'pipedrive', ...input }],
      }),
  );
}

/** The key of a deal custom field, by name (setup made it). */
const fieldKey = (fake: PipedriveFake, name: string): string =>
  [...fake.state.fields.deals.values()].find((f) => f.name === name)?.key ?? '';
const dealsKeyed = (fake: PipedriveFake, name: string): PipedriveRecord[] => {
  const key = fieldKey(fake, name);
  return fake.state.live('deals').filter((d) => d.custom_fields[key]);
};
const totalUpdated = (fake: PipedriveFake): number =>
  fake.state.counters.updated.persons + fake.state.counters.updated.deals;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-crm-pipedrive-'));
  ts = await startTestSandbox({ reachLimit: REACH, seed: { leads: LEADS, events: EVENTS } });
  temporal = await connectTemporal();
}, 240_000);

afterAll(async () => {
  for (const d of destinations) await d.close();
  for (const l of ledgers) await l.close();
  for (const f of fakes) await f.close();
  await temporal?.close();
  await ts?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Pipedrive fake', () => {
  it('keeps the envelope, the rate headers and x-api-token; custom fields get 40-character keys', async () => {
    const fake = await newFake();
    const lines = await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    expect(lines.map((l) => l.outcome)).toEqual(['created', 'created']);
    for (const line of lines) expect(line.key).toMatch(/^[0-9a-f]{40}$/);
    const again = await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    expect(again).toEqual(lines.map((l) => ({ ...l, outcome: 'exists' })));

    const post = (token: string) =>
      fetch(`${fake.baseUrl}/api/v2/persons`, {
        method: 'POST',
        headers: { 'x-api-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Ada', emails: [{ value: 'ada@example.com' }] }),
      });
    const made = await post(fake.token);
    expect(made.status).toBe(200);
    expect(made.headers.get('x-ratelimit-limit')).toBe('80');
    expect(made.headers.get('x-daily-requests-left')).toBe('9997');
    expect(await made.json()).toMatchObject({ success: true, data: { name: 'Ada' } });
    const refused = await post('wrong');
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ success: false, error: 'unauthorized access' });
    const search = await fetch(
      `${fake.baseUrl}/api/v2/persons/search?term=ADA%40example.com&fields=email&exact_match=true`,
      { headers: { 'x-api-token': fake.token } },
    );
    expect(((await search.json()) as { data: { items: unknown[] } }).data.items).toHaveLength(1);
  });
});

describe('mirror into Pipedrive (2,000 leads, 300 events)', () => {
  let fake: PipedriveFake;
  let deps: MirrorDeps;
  let first: MirrorSummary;

  beforeAll(async () => {
    fake = await newFake();
    // A roomy window: this block is about what is written (pacing is tested below).
    fake.state.limits = { perWindow: 5_000, dailyWrites: 100_000 };
    deps = depsFor(fake);
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    first = await runPass(deps, { subjects: ['leads', 'events'], mode: 'full' });
  }, 600_000);

  it('fails with the setup command to run when the deal fields are missing', async () => {
    const bare = await newFake();
    const failure = await runPass(depsFor(bare), { subjects: ['events'], mode: 'full' }).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(String((failure?.cause as Error | undefined)?.message)).toMatch(
      /mirror pass failed: .*run 'ebsync destinations setup pipedrive' once/,
    );
    expect(bare.state.counters.writes).toBe(0);
  });

  it('makes a deal per lead and per event, a person per distinct lead email, linked', () => {
    expect(first.phase).toBe('done');
    const leadKey = fieldKey(fake, 'ebs_lead_id');
    const leadDeals = dealsKeyed(fake, 'ebs_lead_id');
    expect(new Set(leadDeals.map((d) => d.custom_fields[leadKey]))).toEqual(
      sourceIds(ts.sb, 'lead'),
    );
    expect(leadDeals).toHaveLength(LEADS);
    const eventKey = fieldKey(fake, 'ebs_event_id');
    const eventDeals = dealsKeyed(fake, 'ebs_event_id');
    expect(new Set(eventDeals.map((d) => d.custom_fields[eventKey]))).toEqual(
      sourceIds(ts.sb, 'event'),
    );
    expect(eventDeals).toHaveLength(EVENTS);
    const leadEmails = new Set(
      (
        ts.sb.ctx.db
          .prepare(
            `SELECT json_extract(attrs, '$.email') AS email FROM records WHERE type = 'lead' AND business_id = ? AND deleted_at IS NULL`,
          )
          .all(ts.sb.businessId) as { email: string | null }[]
      )
        .map((r) => r.email?.toLowerCase())
        .filter(Boolean),
    );
    const personByEmail = new Map<string, PipedriveRecord>();
    for (const p of fake.state.live('persons')) {
      for (const e of p.fields.emails as { value: string }[]) personByEmail.set(e.value, p);
    }
    for (const email of leadEmails) expect(personByEmail.has(email ?? '')).toBe(true);
    // No email was made into two persons.
    expect(personByEmail.size).toBe(fake.state.live('persons').length);
    const linked = leadDeals.filter((d) => typeof d.fields.person_id === 'number');
    expect(linked.length).toBeGreaterThan(0);
  });

  it('sets the deal status from the event status through the default mapping', () => {
    const statusOf: Record<string, string> = {
      proposal: 'open',
      confirmed: 'won',
      completed: 'won',
      canceled: 'lost',
    };
    const statuses = new Map(
      (
        ts.sb.ctx.db
          .prepare(
            `SELECT id, json_extract(attrs, '$.status') AS status FROM records WHERE type = 'event' AND business_id = ?`,
          )
          .all(ts.sb.businessId) as { id: number; status: string }[]
      ).map((r) => [String(r.id), r.status]),
    );
    const key = fieldKey(fake, 'ebs_event_id');
    const deals = dealsKeyed(fake, 'ebs_event_id');
    expect(new Set(deals.map((d) => d.fields.status)).size).toBeGreaterThan(1);
    for (const deal of deals) {
      const status = statuses.get(deal.custom_fields[key] ?? '') ?? '';
      expect(deal.fields.status).toBe(statusOf[status] ?? 'open');
    }
  });

  it('writes nothing on a second pass; one edited lead updates one Pipedrive record', async () => {
    const before = structuredClone(fake.state.counters);
    const again = await runPass(deps, { subjects: ['leads', 'events'], mode: 'full' });
    expect(again.phase).toBe('done');
    expect(again.counts.written).toBe(0);
    expect(fake.state.counters.writes).toBe(before.writes);
    expect(fake.state.counters.created).toEqual(before.created);

    const [leadId] = [...sourceIds(ts.sb, 'lead')].slice(42, 43);
    ts.sb.admin.patchRecord('lead', Number(leadId), { first_name: 'Edited' });
    const searchesBefore = fake.state.counters.searches;
    const updatedBefore = totalUpdated(fake);
    const edited = await runPass(deps, { subjects: ['leads'], mode: 'incremental' });
    expect(edited.phase).toBe('done');
    expect(totalUpdated(fake)).toBe(updatedBefore + 1);
    expect(fake.state.counters.updated.persons).toBe(before.updated.persons + 1);
    expect(fake.state.counters.created).toEqual(before.created);
    // Updated by the ids the ledger kept: no search.
    expect(fake.state.counters.searches).toBe(searchesBefore);
    const { email } = ts.sb.ctx.db
      .prepare(
        `SELECT json_extract(attrs, '$.email') AS email FROM records WHERE type = 'lead' AND id = ?`,
      )
      .get(Number(leadId)) as { email: string | null };
    const person = fake.state
      .live('persons')
      .find((p) =>
        (p.fields.emails as { value: string }[]).some((e) => e.value === email?.toLowerCase()),
      );
    expect(String(person?.fields.name)).toMatch(/^Edited\b/);
  }, 600_000);

  it('deletes the deal of a deleted lead on the next full pass (onDelete: delete)', async () => {
    const [leadId] = [...sourceIds(ts.sb, 'lead')].slice(7, 8);
    ts.sb.admin.deleteRecord('lead', Number(leadId));
    const deletedBefore = fake.state.counters.deleted;
    const pass = await runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(pass.phase).toBe('done');
    expect(pass.counts.deleted).toBe(1);
    expect(fake.state.counters.deleted).toBe(deletedBefore + 1);
    const key = fieldKey(fake, 'ebs_lead_id');
    const deal = [...fake.state.records.deals.values()].find(
      (d) => d.custom_fields[key] === leadId,
    );
    expect(deal?.is_deleted).toBe(true);
  }, 600_000);
});

describe('Pipedrive rate limits', () => {
  it('429 of the 2-second window: paced from the rate headers, and nothing fails', async () => {
    const fake = await newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    fake.state.limits = { perWindow: 60, dailyWrites: 100_000 };
    const pass = await runPass(depsFor(fake), { subjects: ['events'], mode: 'full' });
    expect(pass.phase).toBe('done');
    const key = fieldKey(fake, 'ebs_event_id');
    expect(new Set(dealsKeyed(fake, 'ebs_event_id').map((d) => d.custom_fields[key]))).toEqual(
      sourceIds(ts.sb, 'event'),
    );
    // Several activities share the window: the rare 429 is waited out, never a failure.
    expect(fake.state.counters.rateLimited.window ?? 0).toBeLessThan(20);
  }, 600_000);

  it('daily POST/PUT allowance spent: pauses until midnight UTC without a retry storm, then resumes', async () => {
    const fake = await newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    fake.state.limits = { perWindow: 5_000, dailyWrites: 60 };
    const deps = depsFor(fake);
    const paused = await runPass(deps, { subjects: ['events'], mode: 'full' });
    expect(paused.phase).toBe('paused');
    const today = new Date(fake.state.now()).toISOString().slice(0, 10);
    expect((paused.pausedUntil ?? '').slice(0, 10) > today).toBe(true);
    expect(paused.error).toMatch(/daily POST\/PUT allowance/);
    const refusals = fake.state.counters.rateLimited.daily ?? 0;
    expect(refusals).toBeGreaterThan(0);
    // Each in-flight write learns of it once; nothing retries into the wall.
    expect(refusals).toBeLessThanOrEqual(40);

    // The next UTC day, with room for the rest (60 writes would pause it again).
    fake.state.clockOffsetMs = Date.parse(paused.pausedUntil ?? '') - Date.now() + 1_000;
    fake.state.limits.dailyWrites = 100_000;
    const resumed = await runPass(deps, { subjects: ['events'], mode: 'full' });
    expect(resumed.phase).toBe('done');
    const key = fieldKey(fake, 'ebs_event_id');
    expect(new Set(dealsKeyed(fake, 'ebs_event_id').map((d) => d.custom_fields[key]))).toEqual(
      sourceIds(ts.sb, 'event'),
    );
  }, 600_000);
});
