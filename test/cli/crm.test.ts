import { afterAll, beforeAll, describe, it } from 'vitest';
import { startHubSpotFake, type HubSpotFake } from '../../sandbox/crm/fakes.js';
import { CliProcess, runCli } from '../helpers/cli.js';

/** Each test spawns the CLI: slow on a busy machine. */
const SPAWN_TIMEOUT = 120_000;

let fake: HubSpotFake;

beforeAll(async () => {
  fake = await startHubSpotFake({ adminToken: 'crm-cli-admin' });
});
afterAll(async () => {
  await fake?.close();
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
});
