import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../config/index.js';
import { DestinationError } from '../destinations/errors.js';
import { hubspotMapping, type HubSpotMapping } from '../destinations/hubspot-mapping.js';
import { setupHubSpot } from '../destinations/hubspot-setup.js';
import { runAction, UserError } from './errors.js';

/** CRMs ebsync writes to (`--to hubspot`); Pipedrive and Salesforce are still to come. */
const CRMS = ['hubspot'] as const;
type Crm = (typeof CRMS)[number];

function crmArgument(value: string): Crm {
  if ((CRMS as readonly string[]).includes(value)) return value as Crm;
  throw new InvalidArgumentError(`expected ${CRMS.join(', ')}`);
}

/** The effective mapping as lines a person reads: property ← column, then the rules. */
export function mappingText(m: HubSpotMapping): string {
  const block = (title: string, map: Record<string, string>): string[] => [
    title,
    ...Object.entries(map).map(([property, column]) => `  ${property.padEnd(24)} ← ${column}`),
  ];
  return `${[
    ...block('lead → contact (matched by email)', m.leads.contact),
    ...block('lead → deal (matched by ebs_lead_id)', m.leads.deal),
    `  ${'dealstage'.padEnd(24)} = ${m.leads.dealStage}`,
    `  ${'pipeline'.padEnd(24)} = ${m.pipeline}`,
    `  deleted lead: ${m.leads.onDelete === 'archive' ? 'deal archived' : 'deal kept'}`,
    ...block('event → deal (matched by ebs_event_id)', m.events.deal),
    `  ${'dealstage'.padEnd(24)} ← status: ${Object.entries(m.events.stages)
      .map(([status, stage]) => `${status === '*' ? 'any other' : status} → ${stage}`)
      .join(', ')}`,
    `  ${'pipeline'.padEnd(24)} = ${m.pipeline}`,
    '  associations             deal → contact of each customer email (default type)',
    `  deleted event: ${m.events.onDelete === 'archive' ? 'deal archived' : 'deal kept'}`,
  ].join('\n')}\n`;
}

const asUserError = (error: unknown): unknown =>
  error instanceof DestinationError ? new UserError(error.message, error.retryable ? 1 : 2) : error;

export function registerCrmCommands(program: Command): void {
  const mapping = program.command('mapping').description('Field mappings of the CRM destinations');
  mapping
    .command('show')
    .description('Print the effective mapping of a CRM: defaults with EBSYNC_<CRM>_MAPPING applied')
    .argument('<crm>', CRMS.join(', '), crmArgument)
    .action((_crm: Crm) =>
      runAction(async () => {
        const config = loadConfig();
        try {
          process.stdout.write(mappingText(hubspotMapping(config.crm.hubspot.mapping)));
        } catch (error) {
          throw asUserError(error);
        }
        await Promise.resolve();
      }),
    );

  const destinations = program.command('destinations').description('Prepare CRM destinations');
  destinations
    .command('setup')
    .description(
      'Create what a CRM needs before the first mirror (HubSpot: the unique deal properties ebs_lead_id and ebs_event_id)',
    )
    .argument('<crm>', CRMS.join(', '), crmArgument)
    .action((_crm: Crm) =>
      runAction(async () => {
        const config = loadConfig();
        const { baseUrl, token } = config.crm.hubspot;
        if (!token) {
          throw new UserError(
            'EBSYNC_HUBSPOT_TOKEN is not set: a HubSpot private-app token is required',
            2,
          );
        }
        let lines;
        try {
          lines = await setupHubSpot({ baseUrl, token });
        } catch (error) {
          throw asUserError(error);
        }
        for (const line of lines) {
          process.stdout.write(
            `deal property ${line.property}: ${line.outcome === 'created' ? 'created (unique values)' : 'already there (unique values)'}\n`,
          );
        }
        process.stdout.write(
          `HubSpot at ${new URL(baseUrl).host} is ready: ebsync sync --to hubspot\n`,
        );
      }),
    );
}
