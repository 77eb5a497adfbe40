import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import {
  startHubSpotFake,
  startPipedriveFake,
  startSalesforceFake,
  type HubSpotFake,
  type PipedriveFake,
  type SalesforceFake,
} from '../../sandbox/crm/fakes.js';
import { CliProcess, runCli } from '../helpers/cli.js';

/** Each test spawns the CLI: slow on a busy machine. */
const SPAWN_TIMEOUT = 120_000;

let fake: HubSpotFake;
let pipedrive: PipedriveFake;
let salesforce: SalesforceFake;

beforeAll(async () => {
  fake = await startHubSpotFake({ adminToken: 'crm-cli-admin' });
  pipedrive = await startPipedriveFake({ adminToken: 'crm-cli-admin' });
  salesforce = await startSalesforceFake({ adminToken: 'crm-cli-admin' });
});
afterAll(async () => {
  await fake?.close();
  await pipedrive?.close();
  await salesforce?.close();
});

describe.concurrent('ebsync CRM commands', { timeout: SPAWN_TIMEOUT }, () => {
  it('mapping show hubspot prints the defaults with the configured overrides', async ({
    expect,
  }) => {
    const result = await runCli(['mapping', 'show', 'hubspot'], {
      EBSYNC_HUBSPOT_MAPPING: JSON.stringify({
        leads: { contact: { hs_lead_status: 'lead_type', phone: null }, onDelete: 'keep' },
        events: { stages: { proposal: 'presentationscheduled' } },
      }),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/hs_lead_status +← lead_type/);
    expect(result.stdout).not.toMatch(/phone +←/);
    expect(result.stdout).toMatch(/firstname +← first_name/);
    expect(result.stdout).toMatch(/proposal → presentationscheduled, confirmed → closedwon/);
    expect(result.stdout).toMatch(/deleted lead: deal kept/);
  });

  it('a variable named like a setting but none (a misspelling) is named in a warning, with the setting meant', async ({
    expect,
  }) => {
    const result = await runCli(['mapping', 'show', 'hubspot'], {
      EBSYNC_HUBSPOT_MAPPNG: '{"leads":{"onDelete":"keep"}}',
      EBS_BASE_URI: 'ik_secret_value_never_shown',
      EBS_VOLUME_ID: 'another tool of the same prefix',
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      'ebsync: warning: EBSYNC_HUBSPOT_MAPPNG is no ebsync setting (did you mean EBSYNC_HUBSPOT_MAPPING?); it is ignored (settings: README, Configuration)\n' +
        'ebsync: warning: EBS_BASE_URI is no ebsync setting (did you mean EBS_BASE_URL?); it is ignored (settings: README, Configuration)\n',
    );
    // Ignored indeed: the defaults apply.
    expect(result.stdout).toMatch(/deleted lead: deal archived/);
  });

  it('a mapping naming a column leads do not have is refused in one line, exit 2', async ({
    expect,
  }) => {
    const result = await runCli(['mapping', 'show', 'hubspot'], {
      EBSYNC_HUBSPOT_MAPPING: '{"leads":{"contact":{"firstname":"given_name"}}}',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "ebsync: EBSYNC_HUBSPOT_MAPPING leads.contact.firstname='given_name' is not allowed: expected a column of leads (docs/mirror.md, Tables)\n",
    );
  });

  it('a stage or status keyed by no event status (a typo) is refused in one line, exit 2, for each CRM', async ({
    expect,
  }) => {
    for (const [crm, map] of [
      ['hubspot', 'stages'],
      ['pipedrive', 'status'],
      ['salesforce', 'stages'],
    ] as const) {
      const setting = `EBSYNC_${crm.toUpperCase()}_MAPPING`;
      const result = await runCli(['mapping', 'show', crm], {
        [setting]: JSON.stringify({ events: { [map]: { cancelled: 'lost' } } }),
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `ebsync: ${setting}='{"events":{"${map}":{"cancelled":"lost"}}}' is not allowed: events.${map}.cancelled: expected an event status (proposal, proposal_date_reserved, confirmed, canceled, completed, *) (see docs/crm.md)\n`,
      );
    }
  });

  it('a mapping in the config file that is no object (an array) is named as such, exit 2', async ({
    expect,
  }) => {
    const dir = mkdtempSync(join(tmpdir(), 'ebsync-crm-config-'));
    try {
      const file = join(dir, 'config.json');
      writeFileSync(file, JSON.stringify({ crm: { salesforce: { mapping: [1] } } }));
      const result = await runCli(['mapping', 'show', 'salesforce'], { EBSYNC_CONFIG: file });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `ebsync: crm.salesforce.mapping in ${file}='[1]' is not allowed: Invalid input: expected object, received array (see docs/crm.md)\n`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a mapping in the config file that names a column leads do not have is named by its key and file, not a variable', async ({
    expect,
  }) => {
    const dir = mkdtempSync(join(tmpdir(), 'ebsync-crm-config-'));
    try {
      const file = join(dir, 'config.json');
      writeFileSync(
        file,
        JSON.stringify({
          crm: {
            hubspot: { mapping: { leads: { contact: { firstname: 'given_name' } } } },
            pipedrive: { mapping: { leads: { deal: { amount: 'subject' } } } },
          },
        }),
      );
      const hubspot = await runCli(['mapping', 'show', 'hubspot'], { EBSYNC_CONFIG: file });
      expect(hubspot.code).toBe(2);
      expect(hubspot.stderr).toBe(
        `ebsync: crm.hubspot.mapping.leads.contact.firstname in ${file}='given_name' is not allowed: expected a column of leads (docs/mirror.md, Tables)\n`,
      );
      const pipedrive = await runCli(['mapping', 'show', 'pipedrive'], { EBSYNC_CONFIG: file });
      expect(pipedrive.code).toBe(2);
      expect(pipedrive.stderr).toBe(
        `ebsync: crm.pipedrive.mapping.leads.deal.amount in ${file} is not allowed: expected title, value, expected_close_date or a custom field key (40 hex digits)\n`,
      );
      // The variable, when set, is what counts, and what a refusal names.
      const overridden = await runCli(['mapping', 'show', 'hubspot'], {
        EBSYNC_CONFIG: file,
        EBSYNC_HUBSPOT_MAPPING: '{"leads":{"deal":{"dealname":"nope"}}}',
      });
      expect(overridden.code).toBe(2);
      expect(overridden.stderr).toBe(
        "ebsync: EBSYNC_HUBSPOT_MAPPING leads.deal.dealname='nope' is not allowed: expected a column of leads (docs/mirror.md, Tables)\n",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a CRM ebsync does not know is refused, exit 2', async ({ expect }) => {
    const result = await runCli(['mapping', 'show', 'zoho']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/zoho.*expected hubspot/);
  });

  it('destinations setup hubspot creates the unique deal properties once', async ({ expect }) => {
    const env = { EBSYNC_HUBSPOT_URL: fake.baseUrl, EBSYNC_HUBSPOT_TOKEN: fake.token };
    const first = await runCli(['destinations', 'setup', 'hubspot'], env);
    expect(first.stderr).toBe('');
    expect(first.stdout).toMatch(/ebs_lead_id: created \(unique values\)/);
    expect(first.stdout).toMatch(/ebs_event_id: created \(unique values\)/);
    expect(first.stdout).toMatch(
      /every mapped contact and deal property: there, of a type that takes its column/,
    );
    expect(fake.state.properties.deals.get('ebs_event_id')?.hasUniqueValue).toBe(true);
    const again = await runCli(['destinations', 'setup', 'hubspot'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/ebs_lead_id: already there/);
    const refused = await runCli(['destinations', 'setup', 'hubspot'], {
      ...env,
      EBSYNC_HUBSPOT_TOKEN: 'pat-wrong',
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/refused the access token.*EBSYNC_HUBSPOT_TOKEN/);
    expect(refused.stderr).not.toMatch(/pat-wrong/);
  });

  it('destinations setup hubspot refuses a mapping whose deal property cannot take its column: one line, exit 2', async ({
    expect,
  }) => {
    // A portal of its own: the tests of this file run at once, and the one above counts the
    // properties it creates.
    const portal = await startHubSpotFake({ adminToken: 'crm-cli-admin' });
    try {
      /** `ebsync destinations setup hubspot` into the portal, with `mapping`. */
      const setupWith = (mapping: object) =>
        runCli(['destinations', 'setup', 'hubspot'], {
          EBSYNC_HUBSPOT_URL: portal.baseUrl,
          EBSYNC_HUBSPOT_TOKEN: portal.token,
          EBSYNC_HUBSPOT_MAPPING: JSON.stringify(mapping),
        });
      const result = await setupWith({ events: { deal: { amount: 'title' } } });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        "ebsync: EBSYNC_HUBSPOT_MAPPING events.deal.amount='title' is not allowed: HubSpot deal property amount is of type number, which takes a money or number column (cents, integer, number), and title is text (docs/mirror.md, Tables)\n",
      );
      expect(result.stdout).not.toMatch(/is ready/);
      // Refused before anything was made in the portal: nothing made and left unsaid.
      expect(portal.state.properties.deals.has('ebs_lead_id')).toBe(false);
      // A deal property the portal does not have is refused the same way.
      const missing = await setupWith({ leads: { deal: { venue_size: 'venue_name' } } });
      expect(missing.code).toBe(2);
      expect(missing.stderr).toBe(
        "ebsync: EBSYNC_HUBSPOT_MAPPING leads.deal.venue_size='venue_name' is not allowed: HubSpot has no deal property venue_size (create it there, or map the column to one it has) (docs/mirror.md, Tables)\n",
      );
    } finally {
      await portal.close();
    }
  });

  it('sandbox --crm hubspot serves the fake and prints where', async ({ expect }) => {
    const sandbox = new CliProcess(['sandbox', '--http', '--port', '0', '--crm', 'hubspot']);
    try {
      await sandbox.waitForLine(/EBSYNC_HUBSPOT_URL=/, 90_000);
      const url = /EBSYNC_HUBSPOT_URL=(\S+) EBSYNC_HUBSPOT_TOKEN=(\S+)/.exec(sandbox.stdout);
      expect(url).not.toBeNull();
      const answer = await fetch(`${url?.[1]}/crm/v3/properties/deals/dealname`, {
        headers: { authorization: `Bearer ${url?.[2]}` },
      });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-hubspot-ratelimit-daily')).toBe('625000');
    } finally {
      sandbox.killAll();
    }
  });

  it('mapping show pipedrive prints the defaults with overrides; a bad field is one line, exit 2', async ({
    expect,
  }) => {
    const result = await runCli(['mapping', 'show', 'pipedrive'], {
      EBSYNC_PIPEDRIVE_MAPPING: JSON.stringify({
        currency: 'EUR',
        leads: { person: { phone: null }, createDeal: false },
        events: { status: { proposal: 'won' }, onDelete: 'keep' },
      }),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/lead → no deal \(createDeal: false\)/);
    expect(result.stdout).not.toMatch(/phone +←/);
    expect(result.stdout).toMatch(/proposal → won, confirmed → won/);
    expect(result.stdout).toMatch(/currency += EUR/);
    expect(result.stdout).toMatch(/deleted event: deal kept/);
    const refused = await runCli(['mapping', 'show', 'pipedrive'], {
      EBSYNC_PIPEDRIVE_MAPPING: '{"leads":{"deal":{"amount":"subject"}}}',
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      'ebsync: EBSYNC_PIPEDRIVE_MAPPING leads.deal.amount is not allowed: expected title, value, expected_close_date or a custom field key (40 hex digits)\n',
    );
  });

  it('destinations setup pipedrive creates the deal fields once and prints their keys', async ({
    expect,
  }) => {
    const env = {
      EBSYNC_PIPEDRIVE_URL: pipedrive.baseUrl,
      EBSYNC_PIPEDRIVE_TOKEN: pipedrive.token,
    };
    const first = await runCli(['destinations', 'setup', 'pipedrive'], env);
    expect(first.stderr).toBe('');
    expect(first.stdout).toMatch(/deal field ebs_lead_id: created \(key [0-9a-f]{40}\)/);
    expect(first.stdout).toMatch(/deal field ebs_event_id: created \(key [0-9a-f]{40}\)/);
    const again = await runCli(['destinations', 'setup', 'pipedrive'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/ebs_lead_id: already there/);
    expect(pipedrive.state.fields.deals.size).toBe(2);
    // A key is Pipedrive's text: printed with its control characters written out.
    const [key, field] = [...pipedrive.state.fields.deals].find(
      ([, f]) => f.name === 'ebs_lead_id',
    )!;
    pipedrive.state.fields.deals.set(key, { ...field, key: 'k\x1b[2J\nforged' });
    try {
      const odd = await runCli(['destinations', 'setup', 'pipedrive'], env);
      expect(odd.stdout).toContain(
        'deal field ebs_lead_id: already there (key k\\x1b[2J\\x0aforged)\n',
      );
      expect(odd.stdout).not.toContain('\x1b');
    } finally {
      pipedrive.state.fields.deals.set(key, field);
    }
    const wrong = 'f'.repeat(40);
    const refused = await runCli(['destinations', 'setup', 'pipedrive'], {
      ...env,
      EBSYNC_PIPEDRIVE_TOKEN: wrong,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/refused the API token.*EBSYNC_PIPEDRIVE_TOKEN/);
    expect(refused.stderr).not.toContain(wrong);
  });

  it('mapping show salesforce prints the defaults with overrides; a reserved field is one line, exit 2', async ({
    expect,
  }) => {
    const result = await runCli(['mapping', 'show', 'salesforce'], {
      EBSYNC_SALESFORCE_MAPPING: JSON.stringify({
        leads: { lead: { Description: null, Title: 'lead_event_type' }, onDelete: 'keep' },
        events: { stages: { proposal: 'Negotiation/Review' }, contactRole: 'Business User' },
      }),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/lead → Lead \(upserted by EBS_Lead_Id__c\)/);
    expect(result.stdout).toMatch(/Title +← lead_event_type/);
    expect(result.stdout).not.toMatch(/Description +←/);
    expect(result.stdout).toMatch(/proposal → Negotiation\/Review, confirmed → Closed Won/);
    expect(result.stdout).toMatch(/Role Business User/);
    expect(result.stdout).toMatch(/deleted lead: Lead kept/);
    const refused = await runCli(['mapping', 'show', 'salesforce'], {
      EBSYNC_SALESFORCE_MAPPING: '{"events":{"opportunity":{"StageName":"status"}}}',
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      'ebsync: EBSYNC_SALESFORCE_MAPPING events.opportunity.StageName is not allowed: ebsync sets EBS_Lead_Id__c, EBS_Event_Id__c, EBS_Email__c, Id, StageName itself\n',
    );
  });

  it('destinations setup salesforce refuses a text column mapped to a currency field, exit 2', async ({
    expect,
  }) => {
    const result = await runCli(['destinations', 'setup', 'salesforce'], {
      EBSYNC_SALESFORCE_URL: salesforce.baseUrl,
      EBSYNC_SALESFORCE_CLIENT_ID: salesforce.clientId,
      EBSYNC_SALESFORCE_CLIENT_SECRET: salesforce.clientSecret,
      EBSYNC_SALESFORCE_REFRESH_TOKEN: salesforce.token,
      EBSYNC_SALESFORCE_MAPPING: '{"events":{"opportunity":{"Amount":"title"}}}',
    });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /^ebsync: EBSYNC_SALESFORCE_MAPPING maps a column of another kind to a Salesforce field: Opportunity\.Amount \(currency\) ← title \(text\); [^\n]*\n$/,
    );
    // The same mapping written in the config file is named there.
    const dir = mkdtempSync(join(tmpdir(), 'ebsync-crm-config-'));
    try {
      const file = join(dir, 'config.json');
      writeFileSync(
        file,
        JSON.stringify({
          crm: { salesforce: { mapping: { events: { opportunity: { Amount: 'title' } } } } },
        }),
      );
      const fromFile = await runCli(['destinations', 'setup', 'salesforce'], {
        EBSYNC_CONFIG: file,
        EBSYNC_SALESFORCE_URL: salesforce.baseUrl,
        EBSYNC_SALESFORCE_CLIENT_ID: salesforce.clientId,
        EBSYNC_SALESFORCE_CLIENT_SECRET: salesforce.clientSecret,
        EBSYNC_SALESFORCE_REFRESH_TOKEN: salesforce.token,
      });
      expect(fromFile.code).toBe(2);
      expect(fromFile.stderr.split('\n')[0]).toContain(
        `ebsync: crm.salesforce.mapping in ${file} maps a column of another kind to a Salesforce field: Opportunity.Amount (currency) ← title (text); `,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('destinations setup salesforce checks the external-id fields, and names what is missing', async ({
    expect,
    onTestFinished,
  }) => {
    // An org of its own: this test deletes a field, and the tests of this file run at once.
    const salesforce = await startSalesforceFake({ adminToken: 'crm-cli-admin' });
    onTestFinished(() => salesforce.close());
    const env = {
      EBSYNC_SALESFORCE_URL: salesforce.baseUrl,
      EBSYNC_SALESFORCE_CLIENT_ID: salesforce.clientId,
      EBSYNC_SALESFORCE_CLIENT_SECRET: salesforce.clientSecret,
      EBSYNC_SALESFORCE_REFRESH_TOKEN: salesforce.token,
    };
    const ready = await runCli(['destinations', 'setup', 'salesforce'], env);
    expect(ready.stderr).toBe('');
    expect(ready.stdout).toMatch(/external id Lead\.EBS_Lead_Id__c: there \(string\)/);
    expect(ready.stdout).toMatch(/external id Opportunity\.EBS_Event_Id__c: there/);
    expect(ready.stdout).toMatch(/is ready: ebsync sync --to salesforce/);
    const unset = await runCli(['destinations', 'setup', 'salesforce'], {
      EBSYNC_SALESFORCE_URL: salesforce.baseUrl,
    });
    expect(unset.code).toBe(2);
    expect(unset.stderr).toMatch(/EBSYNC_SALESFORCE_CLIENT_ID and EBSYNC_SALESFORCE_REFRESH_TOKEN/);
    const revoked = 'revoked-refresh-token-123';
    const refused = await runCli(['destinations', 'setup', 'salesforce'], {
      ...env,
      EBSYNC_SALESFORCE_REFRESH_TOKEN: revoked,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/invalid_grant.*EBSYNC_SALESFORCE_REFRESH_TOKEN/);
    expect(refused.stderr).not.toContain(revoked);
    salesforce.state.fields.Lead.delete('EBS_Lead_Id__c');
    const missing = await runCli(['destinations', 'setup', 'salesforce'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/Salesforce has no field Lead\.EBS_Lead_Id__c: create it/);
  });

  it('sandbox --crm hubspot,pipedrive,salesforce serves the fakes and prints where', async ({
    expect,
  }) => {
    const sandbox = new CliProcess([
      'sandbox',
      '--http',
      '--port',
      '0',
      '--crm',
      'hubspot,pipedrive,salesforce',
    ]);
    try {
      await sandbox.waitForLine(/EBSYNC_SALESFORCE_URL=/, 90_000);
      expect(sandbox.stdout).toMatch(/EBSYNC_HUBSPOT_URL=/);
      const org =
        /EBSYNC_SALESFORCE_URL=(\S+) EBSYNC_SALESFORCE_CLIENT_ID=(\S+) EBSYNC_SALESFORCE_CLIENT_SECRET=(\S+) EBSYNC_SALESFORCE_REFRESH_TOKEN=(\S+)/.exec(
          sandbox.stdout,
        );
      expect(org).not.toBeNull();
      const token = await fetch(`${org?.[1]}/services/oauth2/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          client_id: org?.[2] ?? '',
          client_secret: org?.[3] ?? '',
          refresh_token: org?.[4] ?? '',
        }),
      });
      expect(token.status).toBe(200);
      expect(await token.json()).toMatchObject({ instance_url: org?.[1], token_type: 'Bearer' });
      const url = /EBSYNC_PIPEDRIVE_URL=(\S+) EBSYNC_PIPEDRIVE_TOKEN=(\S+)/.exec(sandbox.stdout);
      expect(url).not.toBeNull();
      const answer = await fetch(`${url?.[1]}/v1/dealFields`, {
        headers: { 'x-api-token': url?.[2] ?? '' },
      });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-ratelimit-limit')).toBe('80');
      expect(await answer.json()).toMatchObject({ success: true, data: [] });
    } finally {
      sandbox.killAll();
    }
  });
});
