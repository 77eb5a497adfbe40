import { beforeAll, describe, expect, it } from 'vitest';
import type { MirrorDeps } from '../../activities/mirror/pass.js';
import { exitCodeOf } from '../../cli/mirror-summary.js';
import { HubSpotDestination } from '../../destinations/hubspot-destination.js';
import { setupHubSpot } from '../../destinations/hubspot-setup.js';
import { startHubSpotFake, type HubSpotFake } from '../../sandbox/crm/fakes.js';
import type { CrmObject } from '../../sandbox/crm/hubspot/state.js';
import type { MirrorSummary } from '../../workflows/mirror-types.js';
import { sourceIds } from '../mirror/source-truth.js';
import { EVENTS, LEADS, useCrmMirror } from './crm-mirror.js';

const crm = useCrmMirror('hubspot', startHubSpotFake, (fake) => ({
  hubspot: { baseUrl: fake.baseUrl, token: fake.token },
}));

const live = (fake: HubSpotFake, type: 'contacts' | 'deals'): CrmObject[] =>
  [...fake.state.objects[type].values()].filter((o) => !o.archived);
const dealsKeyed = (fake: HubSpotFake, key: 'ebs_lead_id' | 'ebs_event_id'): CrmObject[] =>
  live(fake, 'deals').filter((d) => d.properties[key]);

describe('HubSpot fake', () => {
  it('answers a duplicate create with 409 CONFLICT naming the existing id, and checks the token', async () => {
    const fake = await crm.newFake();
    const post = (token: string, email: string) =>
      fetch(`${fake.baseUrl}/crm/v3/objects/contacts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ properties: { email } }),
      });
    const first = await post(fake.token, 'a@example.com');
    expect(first.status).toBe(201);
    expect(first.headers.get('x-hubspot-ratelimit-max')).toBe('190');
    const { id } = (await first.json()) as { id: string };
    const again = await post(fake.token, 'A@example.com');
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({
      status: 'error',
      category: 'CONFLICT',
      message: `Contact already exists. Existing ID: ${id}`,
    });
    expect((await post('wrong', 'b@example.com')).status).toBe(401);
  });
});

describe('mirror into HubSpot (2,000 leads, 300 events)', () => {
  let fake: HubSpotFake;
  let deps: MirrorDeps;
  let first: MirrorSummary;

  beforeAll(async () => {
    fake = await crm.newFake();
    deps = crm.depsFor(fake);
    await setupHubSpot({ baseUrl: fake.baseUrl, token: fake.token });
    first = await crm.runPass(deps, { subjects: ['leads', 'events'], mode: 'full' });
  }, 300_000);

  it('fails with the setup command to run when the unique deal properties are missing', async () => {
    const bare = await crm.newFake();
    const failure = await crm.failureOf(crm.depsFor(bare), { subjects: ['events'], mode: 'full' });
    expect(failure).toMatch(/mirror pass failed: .*run 'ebsync destinations setup hubspot' once/);
    expect(bare.state.counters.upsertInputs).toBe(0);
  });

  it('fails at the start, naming the mapping entry, when a deal property cannot take its column', async () => {
    const bare = await crm.newFake();
    await setupHubSpot({ baseUrl: bare.baseUrl, token: bare.token });
    const mapped = new HubSpotDestination({
      baseUrl: bare.baseUrl,
      token: bare.token,
      mapping: { events: { deal: { amount: 'title' } } },
    });
    crm.closeLater(mapped);
    const failure = await crm.failureOf(
      { ...crm.depsFor(bare), destination: () => Promise.resolve(mapped) },
      { subjects: ['events'], mode: 'full' },
    );
    expect(failure).toMatch(
      /EBSYNC_HUBSPOT_MAPPING events\.deal\.amount='title' is not allowed: HubSpot deal property amount is of type number/,
    );
    expect(bare.state.counters.upsertInputs).toBe(0);
  }, 300_000);

  it('makes a deal per lead and per event, and a contact per distinct lead email', () => {
    expect(first.phase).toBe('done');
    const leadIds = sourceIds(crm.sb, 'lead');
    const leadDeals = dealsKeyed(fake, 'ebs_lead_id');
    expect(new Set(leadDeals.map((d) => d.properties.ebs_lead_id))).toEqual(leadIds);
    expect(leadDeals).toHaveLength(leadIds.size);
    const eventDeals = dealsKeyed(fake, 'ebs_event_id');
    expect(new Set(eventDeals.map((d) => d.properties.ebs_event_id))).toEqual(
      sourceIds(crm.sb, 'event'),
    );
    // Counted as what went to HubSpot: the bookings read along have no HubSpot object, and
    // are passed over, not written (they were counted written, 'written' above the deals made).
    const c = first.counts;
    expect(c.written).toBe(leadDeals.length + eventDeals.length);
    expect(c.passedOver).toBeGreaterThan(0);
    expect(c.written + c.unchanged + (c.again ?? 0) + c.refused + (c.passedOver ?? 0)).toBe(c.read);
    const leadEmails = crm.leadEmails();
    const contactEmails = new Set(live(fake, 'contacts').map((c) => c.properties.email));
    for (const email of leadEmails) expect(contactEmails.has(email ?? '')).toBe(true);
    // Every lead deal with an email is linked to that contact.
    expect(fake.state.dealContacts.size).toBeGreaterThanOrEqual(leadEmails.size);
  });

  it('sets the deal stage from the event status through the default pipeline mapping', () => {
    const stageOf: Record<string, string> = {
      proposal: 'contractsent',
      confirmed: 'closedwon',
      completed: 'closedwon',
      canceled: 'closedlost',
    };
    const statuses = crm.eventStageKeys();
    // Canceled and completed are booleans of the event, not status values.
    expect([...statuses.values()]).toContain('canceled');
    const deals = dealsKeyed(fake, 'ebs_event_id');
    expect(new Set(deals.map((d) => d.properties.dealstage)).size).toBeGreaterThan(1);
    for (const deal of deals) {
      const status = statuses.get(deal.properties.ebs_event_id ?? '') ?? '';
      expect(deal.properties.dealstage).toBe(stageOf[status] ?? 'contractsent');
      expect(deal.properties.pipeline).toBe('default');
    }
  });

  it('writes nothing on a second pass; one edited lead updates one contact', async () => {
    const before = structuredClone(fake.state.counters);
    const again = await crm.runPass(deps, { subjects: ['leads', 'events'], mode: 'full' });
    expect(again.phase).toBe('done');
    expect(again.counts.written).toBe(0);
    expect(fake.state.counters.upsertInputs).toBe(before.upsertInputs);
    expect(fake.state.counters.created).toEqual(before.created);
    expect(fake.state.counters.updated).toEqual(before.updated);

    const [leadId] = [...sourceIds(crm.sb, 'lead')].slice(42, 43);
    crm.sb.admin.patchRecord('lead', Number(leadId), { first_name: 'Edited' });
    const edited = await crm.runPass(deps, { subjects: ['leads'], mode: 'incremental' });
    expect(edited.phase).toBe('done');
    expect(fake.state.counters.updated.contacts).toBe(before.updated.contacts + 1);
    expect(fake.state.counters.updated.deals).toBe(before.updated.deals);
    expect(fake.state.counters.created).toEqual(before.created);
    const email = crm.leadEmail(leadId);
    const contact = live(fake, 'contacts').find((c) => c.properties.email === email?.toLowerCase());
    expect(contact?.properties.firstname).toBe('Edited');
  }, 300_000);

  it('counts the records written without a contact, for want of an email address, and stays complete', async () => {
    await crm.expectWithoutEmailCounted(first, deps);
  }, 300_000);

  it('archives the deal of a deleted lead on the next full pass', async () => {
    const [leadId] = [...sourceIds(crm.sb, 'lead')].slice(7, 8);
    crm.sb.admin.deleteRecord('lead', Number(leadId));
    const archivedBefore = fake.state.counters.archived;
    const pass = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(pass.phase).toBe('done');
    expect(pass.counts.deleted).toBe(1);
    expect(fake.state.counters.archived).toBe(archivedBefore + 1);
    const deal = [...fake.state.objects.deals.values()].find(
      (d) => d.properties.ebs_lead_id === leadId,
    );
    expect(deal?.archived).toBe(true);
  }, 300_000);

  it('counts no deleted booking as marked deleted: HubSpot holds none', async () => {
    const [bookingId] = [...sourceIds(crm.sb, 'lead_booking')].slice(0, 1);
    crm.sb.admin.deleteRecord('lead_booking', Number(bookingId));
    const archivedBefore = fake.state.counters.archived;
    const pass = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(pass.phase).toBe('done');
    expect(pass.counts.deleted).toBe(0);
    expect(fake.state.counters.archived).toBe(archivedBefore);
  }, 300_000);
});

describe('HubSpot rate limits', () => {
  it('TEN_SECONDLY_ROLLING: paces under a small burst limit, and nothing fails', async () => {
    const fake = await crm.newFake();
    await setupHubSpot({ baseUrl: fake.baseUrl, token: fake.token });
    fake.state.limits.tenSecondly = 30;
    const pass = await crm.runPass(crm.depsFor(fake), { subjects: ['leads'], mode: 'full' });
    expect(pass.phase).toBe('done');
    expect(new Set(dealsKeyed(fake, 'ebs_lead_id').map((d) => d.properties.ebs_lead_id))).toEqual(
      sourceIds(crm.sb, 'lead'),
    );
    // Paced from the rate headers: the fake never had to turn a call away.
    expect(fake.state.counters.rateLimited.TEN_SECONDLY_ROLLING ?? 0).toBe(0);
  }, 300_000);

  it('DAILY: pauses the pass until the reset without a retry storm, then resumes', async () => {
    const fake = await crm.newFake();
    await setupHubSpot({ baseUrl: fake.baseUrl, token: fake.token });
    fake.state.limits.daily = 40;
    const deps = crm.depsFor(fake);
    const paused = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(paused.phase).toBe('paused');
    const today = new Date(fake.state.now()).toISOString().slice(0, 10);
    expect((paused.pausedUntil ?? '').slice(0, 10) > today).toBe(true);
    expect(paused.error).toMatch(/daily API limit/);
    const written = dealsKeyed(fake, 'ebs_lead_id').length;
    expect(written).toBeLessThan(LEADS);
    const refusals = fake.state.counters.rateLimited.DAILY ?? 0;
    expect(refusals).toBeGreaterThan(0);
    expect(refusals).toBeLessThanOrEqual(8);

    // Before the reset: stopped again at the first call, still no storm.
    const stillPaused = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(stillPaused.phase).toBe('paused');
    expect((fake.state.counters.rateLimited.DAILY ?? 0) - refusals).toBeLessThanOrEqual(2);

    // The fake's clock passes midnight: the day's allowance is back and the mirror finishes.
    fake.state.clockOffsetMs = Date.parse(paused.pausedUntil ?? '') - Date.now() + 1_000;
    const resumed = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(resumed.phase).toBe('done');
    expect(new Set(dealsKeyed(fake, 'ebs_lead_id').map((d) => d.properties.ebs_lead_id))).toEqual(
      sourceIds(crm.sb, 'lead'),
    );
  }, 300_000);
});

describe('HubSpot daily limit within a batch', () => {
  it("DAILY after a batch's deals: they are counted and kept with the pause, and the pass after the reset writes the rest and links their contacts", async () => {
    const fake = await crm.newFake();
    await setupHubSpot({ baseUrl: fake.baseUrl, token: fake.token });
    const deps = crm.depsFor(fake);
    // The pass's schema check made first, so that what is left of the day is write calls.
    await (await deps.destination('hubspot')).ensureSchema([]);
    const read = await fetch(`${fake.baseUrl}/crm/v3/properties/deals/ebs_event_id`, {
      headers: { authorization: `Bearer ${fake.token}` },
    });
    const used =
      fake.state.limits.daily - Number(read.headers.get('x-hubspot-ratelimit-daily-remaining'));
    // One call left: the first batch of deals (one call, all of it or none); its contacts and
    // their links, and every other batch, meet the spent limit.
    fake.state.limits.daily = used + 1;

    const paused = await crm.runPass(deps, { subjects: ['events'], mode: 'full' });
    expect(paused.phase).toBe('paused');
    const made = dealsKeyed(fake, 'ebs_event_id');
    expect(made.length).toBeGreaterThan(0);
    expect(made.length).toBeLessThan(EVENTS);
    expect(fake.state.dealContacts.size).toBe(0);
    // Counted as HubSpot holds them (the pass said 0 written).
    expect(paused.counts.written).toBe(made.length);

    fake.state.clockOffsetMs = Date.parse(paused.pausedUntil ?? '') - Date.now() + 1_000;
    fake.state.limits.daily = 625_000;
    const resumed = await crm.runPass(deps, { subjects: ['events'], mode: 'full' });
    expect(resumed.phase).toBe('done');
    // The deals made are in the ledger: written again are only those whose contacts the
    // pause left unmade (written in part), to link them; the rest are new.
    const withEmail = crm.eventsWithEmail();
    const inPart = made.filter((d) => withEmail.has(d.properties.ebs_event_id ?? '')).length;
    expect(resumed.counts.written).toBe(EVENTS - made.length + inPart);
    expect(fake.state.counters.created.deals).toBe(EVENTS);
    expect(dealsKeyed(fake, 'ebs_event_id')).toHaveLength(EVENTS);
    for (const deal of dealsKeyed(fake, 'ebs_event_id')) {
      const linked = [...fake.state.dealContacts].some((p) => p.startsWith(`${deal.id}|`));
      expect(linked).toBe(withEmail.has(deal.properties.ebs_event_id ?? ''));
    }
  }, 600_000);
});

describe('HubSpot item errors', () => {
  it('a pass goes on past a deal a validation rule refuses, says which and why, and writes it once the rule is gone', async () => {
    const fake = await crm.newFake();
    await setupHubSpot({ baseUrl: fake.baseUrl, token: fake.token });
    const deps = crm.depsFor(fake);
    // A portal admin allows no '#' in deal names; one lead's subject (its deal name) has one.
    const leadIds = sourceIds(crm.sb, 'lead');
    const [leadId] = [...leadIds].slice(150, 151);
    crm.sb.admin.patchRecord('lead', Number(leadId), { subject: 'Gala #2' });
    fake.state.validationRules = [
      { objectType: 'deals', property: 'dealname', pattern: '^[^#]*$' },
    ];

    const pass = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    // Not done: a record the destination refused is left out, and the pass says so.
    expect(pass.phase).toBe('incomplete');
    expect(pass.error).toBeNull();
    // Refused, and still known to the ledger: the full pass does not sweep it as deleted.
    expect(pass.counts).toMatchObject({ refused: 1, deleted: 0 });
    expect(pass.refusals).toEqual([
      expect.stringMatching(new RegExp(`^leads ${leadId} refused: VALIDATION_ERROR: .*dealname`)),
    ]);
    const written = new Set(dealsKeyed(fake, 'ebs_lead_id').map((d) => d.properties.ebs_lead_id));
    expect(written.has(leadId ?? '')).toBe(false);
    expect(written.size).toBe(leadIds.size - 1);

    fake.state.validationRules = [];
    const next = await crm.runPass(deps, { subjects: ['leads'], mode: 'incremental' });
    expect(next.phase).toBe('done');
    expect(next.counts).toMatchObject({ written: 1, refused: 0 });
    expect(next.refusals).toEqual([]);
    const deal = dealsKeyed(fake, 'ebs_lead_id').find((d) => d.properties.ebs_lead_id === leadId);
    expect(deal?.properties.dealname).toBe('Gala #2');
    expect(new Set(dealsKeyed(fake, 'ebs_lead_id').map((d) => d.properties.ebs_lead_id))).toEqual(
      leadIds,
    );
  }, 600_000);

  it('a deal whose contact HubSpot refuses is written in part, and the next pass links it once the rule is gone', async () => {
    const fake = await crm.newFake();
    await setupHubSpot({ baseUrl: fake.baseUrl, token: fake.token });
    const deps = crm.depsFor(fake);
    const leadIds = sourceIds(crm.sb, 'lead');
    const [leadId] = [...leadIds].slice(160, 161);
    crm.sb.admin.patchRecord('lead', Number(leadId), { first_name: 'Ann #1' });
    fake.state.validationRules = [
      { objectType: 'contacts', property: 'firstname', pattern: '^[^#]*$' },
    ];
    const linked = (): boolean => {
      const deal = dealsKeyed(fake, 'ebs_lead_id').find((d) => d.properties.ebs_lead_id === leadId);
      return [...fake.state.dealContacts].some((p) => p.startsWith(`${deal?.id}|`));
    };

    const pass = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    // Not all of it was written: the pass is incomplete (exit 3), though nothing was refused.
    expect(pass.phase).toBe('incomplete');
    expect(exitCodeOf(pass)).toBe(3);
    expect(pass.counts.refused).toBe(0);
    expect(pass.refusals).toEqual([
      expect.stringMatching(
        new RegExp(`^leads ${leadId} written in part: VALIDATION_ERROR: .*firstname`),
      ),
    ]);
    expect(linked()).toBe(false);

    fake.state.validationRules = [];
    const next = await crm.runPass(deps, { subjects: ['leads'], mode: 'incremental' });
    expect(next.phase).toBe('done');
    expect(next.counts).toMatchObject({ written: 1, refused: 0 });
    expect(next.refusals).toEqual([]);
    expect(linked()).toBe(true);
  }, 600_000);

  it('a deal HubSpot does not read for another reason than not-found is not taken as gone: named, not archived, and archived by the next full pass', async () => {
    const fake = await crm.newFake();
    await setupHubSpot({ baseUrl: fake.baseUrl, token: fake.token });
    const deps = crm.depsFor(fake);
    expect((await crm.runPass(deps, { subjects: ['leads'], mode: 'full' })).phase).toBe('done');

    const [kept, gone, vanished] = [...sourceIds(crm.sb, 'lead')].slice(170, 173);
    for (const id of [kept, gone, vanished]) crm.sb.admin.deleteRecord('lead', Number(id));
    const dealOf = (leadId: string | undefined) =>
      dealsKeyed(fake, 'ebs_lead_id').find((d) => d.properties.ebs_lead_id === leadId);
    const [unread, archived, missing] = [dealOf(kept), dealOf(gone), dealOf(vanished)];
    // Someone archived one deal in HubSpot already: not found, so already gone.
    if (missing) missing.archived = true;
    // The portal answers the read of one deal with an error that is not OBJECT_NOT_FOUND
    // (switched over HTTP, as a person trying the fake would).
    const switched = await fetch(`${fake.baseUrl}/_admin/read-refusals`, {
      method: 'PUT',
      headers: { 'x-admin-token': 'admin-token-for-tests', 'content-type': 'application/json' },
      body: JSON.stringify({ ids: [unread?.id], message: 'Try again later' }),
    });
    expect(switched.status).toBe(200);

    const pass = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    // Not done: one deal is still live in HubSpot, and the pass says which and why.
    expect(pass.phase).toBe('incomplete');
    expect(exitCodeOf(pass)).toBe(3);
    expect(pass.counts).toMatchObject({ deleted: 1, refused: 1 });
    expect(pass.refusals).toEqual([`leads ${kept} not deleted: INTERNAL_ERROR: Try again later`]);
    expect(unread?.archived).toBe(false);
    expect(archived?.archived).toBe(true);

    // The portal reads it again: the next full pass archives it (the ledger kept it live).
    fake.state.readRefused.clear();
    const next = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(next.phase).toBe('done');
    expect(next.counts).toMatchObject({ deleted: 1, refused: 0 });
    expect(next.refusals).toEqual([]);
    expect(unread?.archived).toBe(true);
  }, 600_000);
});
