import { InvalidArgumentError, type Command } from 'commander';

const run = () => import('../crm.js');

/** CRMs ebsync writes to (`--to hubspot`, `--to pipedrive`, `--to salesforce`). */
const CRMS = ['hubspot', 'pipedrive', 'salesforce'] as const;
export type Crm = (typeof CRMS)[number];

function crmArgument(value: string): Crm {
  if ((CRMS as readonly string[]).includes(value)) return value as Crm;
  throw new InvalidArgumentError(`expected ${CRMS.join(', ')}`);
}

/** `ebsync mapping show` and `destinations setup`: words and help; the work is in ../crm.ts. */
export function registerCrmCommands(program: Command): void {
  const mapping = program.command('mapping').description('Field mappings of the CRM destinations');
  mapping
    .command('show')
    .description(
      'Print the effective mapping of a CRM: defaults with EBSYNC_<CRM>_MAPPING (or crm.<crm>.mapping in the config file) applied',
    )
    .argument('<crm>', CRMS.join(', '), crmArgument)
    .action(async (crm: Crm) => (await run()).mappingShowCommand(crm));

  const destinations = program.command('destinations').description('Prepare CRM destinations');
  destinations
    .command('setup')
    .description(
      'Create what a CRM needs before the first mirror: the deal fields ebs_lead_id and ebs_event_id (unique-value properties in HubSpot, custom fields in Pipedrive); for Salesforce, check the external-id fields an admin made',
    )
    .argument('<crm>', CRMS.join(', '), crmArgument)
    .action(async (crm: Crm) => (await run()).destinationsSetupCommand(crm));
}
