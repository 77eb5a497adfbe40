import { loadStartupConfig } from './startup-config.js';
import { DestinationError } from '../destinations/errors.js';
import { hubspotMapping, type HubSpotMapping } from '../destinations/hubspot-mapping.js';
import { setupHubSpot } from '../destinations/hubspot-setup.js';
import { pipedriveMapping, type PipedriveMapping } from '../destinations/pipedrive-mapping.js';
import { setupPipedrive } from '../destinations/pipedrive-setup.js';
import { salesforceMapping, type SalesforceMapping } from '../destinations/salesforce-mapping.js';
import { crmRefreshTokens } from '../store/crm-refresh-tokens.js';
import { dataConverter } from '../worker/data-converter.js';
import { salesforceClientOptions } from '../destinations/salesforce-client.js';
import { checkSalesforce } from '../destinations/salesforce-setup.js';
import type { Crm } from './commands/crm.js';
import { runAction, UserError } from './errors.js';
import { shownSafely } from './shown-text.js';

/** The effective mapping as lines a person reads: property ← column, then the rules. */
export function hubspotMappingText(m: HubSpotMapping): string {
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

const arrow = (map: Record<string, string>): string[] =>
  Object.entries(map).map(([field, column]) => `  ${field.padEnd(24)} ← ${column}`);

/** The effective Pipedrive mapping as lines a person reads. */
export function pipedriveMappingText(m: PipedriveMapping): string {
  return `${[
    'lead → person (found by email; else created)',
    `  ${'name'.padEnd(24)} ← ${m.leads.person.name ?? 'first_name + last_name (else email)'}`,
    `  ${'emails'.padEnd(24)} ← email`,
    ...arrow(Object.fromEntries(Object.entries(m.leads.person).filter(([f]) => f !== 'name'))),
    ...(m.leads.createDeal
      ? [
          'lead → deal (found by the ledger, else by deal field ebs_lead_id)',
          ...arrow(m.leads.deal),
          `  ${'status'.padEnd(24)} = open`,
          `  ${'person_id'.padEnd(24)} = the lead's person`,
        ]
      : ['lead → no deal (createDeal: false)']),
    `  deleted lead: ${m.leads.onDelete === 'delete' ? 'deal deleted' : 'deal kept'}; persons are never deleted`,
    'event → deal (found by the ledger, else by deal field ebs_event_id)',
    ...arrow(m.events.deal),
    `  ${'status'.padEnd(24)} ← status: ${Object.entries(m.events.status)
      .map(([status, to]) => `${status === '*' ? 'any other' : status} → ${to}`)
      .join(', ')}`,
    `  ${'person_id'.padEnd(24)} = person of the first customer email`,
    `  ${'currency'.padEnd(24)} = ${m.currency}`,
    `  deleted event: ${m.events.onDelete === 'delete' ? 'deal deleted' : 'deal kept'}`,
  ].join('\n')}\n`;
}

/** The effective Salesforce mapping as lines a person reads. */
export function salesforceMappingText(m: SalesforceMapping): string {
  return `${[
    'lead → Lead (upserted by EBS_Lead_Id__c)',
    ...arrow(m.leads.lead),
    `  ${'LastName, Company'.padEnd(24)} = ${'[not provided]'} when empty or spaces only (required fields)`,
    `  deleted lead: ${m.leads.onDelete === 'delete' ? 'Lead deleted (to the Recycle Bin)' : 'Lead kept'}`,
    'event → Opportunity (upserted by EBS_Event_Id__c)',
    ...arrow(m.events.opportunity),
    `  ${'StageName'.padEnd(24)} ← status: ${Object.entries(m.events.stages)
      .map(([status, stage]) => `${status === '*' ? 'any other' : status} → ${stage}`)
      .join(', ')}`,
    `  each Opportunity written: a Contact per customer email not linked yet (upserted by EBS_Email__c), linked by an OpportunityContactRole (Role ${m.events.contactRole}; the first email primary when none is)`,
    `  deleted event: ${m.events.onDelete === 'delete' ? 'Opportunity deleted (to the Recycle Bin)' : 'Opportunity kept'}`,
  ].join('\n')}\n`;
}

const mappingText = (crm: Crm, config: ReturnType<typeof loadStartupConfig>): string =>
  crm === 'hubspot'
    ? hubspotMappingText(hubspotMapping(config.crm.hubspot.mapping, config.crm.hubspot.mappingFile))
    : crm === 'pipedrive'
      ? pipedriveMappingText(
          pipedriveMapping(config.crm.pipedrive.mapping, config.crm.pipedrive.mappingFile),
        )
      : salesforceMappingText(
          salesforceMapping(config.crm.salesforce.mapping, config.crm.salesforce.mappingFile),
        );

/** `destinations setup salesforce`: the org cannot be changed over REST cheaply, so it is checked. */
async function checkSalesforceOrg(config: ReturnType<typeof loadStartupConfig>): Promise<void> {
  let options;
  try {
    options = salesforceClientOptions(config.crm.salesforce);
  } catch (error) {
    throw new UserError((error as Error).message, 2);
  }
  // The refresh token the workers present (Salesforce may have rotated the configured one).
  const codec = dataConverter(config).payloadCodecs?.[0];
  if (!codec) throw new Error('the data converter has no payload codec');
  const refreshTokens = crmRefreshTokens(config, codec);
  let lines;
  try {
    lines = await checkSalesforce(
      { ...options, refreshTokens },
      salesforceMapping(config.crm.salesforce.mapping, config.crm.salesforce.mappingFile),
      config.crm.salesforce.mappingFile,
    );
  } finally {
    refreshTokens.close();
  }
  // The field's type and Pipedrive's field key below are the vendor's words: a line each, and
  // no control character of theirs reaches the terminal.
  for (const line of lines) {
    process.stdout.write(`${shownSafely(`external id ${line.field}: there (${line.type})`)}\n`);
  }
  process.stdout.write('every mapped Lead and Opportunity field: there\n');
}

const asUserError = (error: unknown): unknown =>
  error instanceof DestinationError ? new UserError(error.message, error.retryable ? 1 : 2) : error;

/** `ebsync mapping show <crm>`. */
export function mappingShowCommand(crm: Crm): Promise<void> {
  return runAction(async () => {
    const config = loadStartupConfig();
    try {
      process.stdout.write(mappingText(crm, config));
    } catch (error) {
      throw asUserError(error);
    }
    await Promise.resolve();
  });
}

/** `ebsync destinations setup <crm>`. */
export function destinationsSetupCommand(crm: Crm): Promise<void> {
  return runAction(async () => {
    const config = loadStartupConfig();
    if (crm === 'salesforce') {
      try {
        await checkSalesforceOrg(config);
      } catch (error) {
        throw asUserError(error);
      }
      process.stdout.write(
        `Salesforce at ${new URL(config.crm.salesforce.baseUrl).host} is ready: ebsync sync --to salesforce\n`,
      );
      return;
    }
    const { baseUrl, token } = config.crm[crm];
    const vendor = crm === 'hubspot' ? 'HubSpot' : 'Pipedrive';
    if (!token) {
      throw new UserError(
        `EBSYNC_${crm.toUpperCase()}_TOKEN is not set: a ${vendor} ${crm === 'hubspot' ? 'private-app' : 'API'} token is required`,
        2,
      );
    }
    try {
      if (crm === 'hubspot') {
        const { mapping, mappingFile } = config.crm.hubspot;
        const lines = await setupHubSpot(
          { baseUrl, token },
          hubspotMapping(mapping, mappingFile),
          mappingFile,
        );
        for (const line of lines) {
          process.stdout.write(
            `deal property ${line.property}: ${line.outcome === 'created' ? 'created (unique values)' : 'already there (unique values)'}\n`,
          );
        }
        process.stdout.write(
          'every mapped contact and deal property: there, of a type that takes its column\n',
        );
      } else {
        for (const line of await setupPipedrive({ baseUrl, token })) {
          process.stdout.write(
            `${shownSafely(`deal field ${line.field}: ${line.outcome === 'created' ? 'created' : 'already there'} (key ${line.key})`)}\n`,
          );
        }
      }
    } catch (error) {
      throw asUserError(error);
    }
    process.stdout.write(
      `${vendor} at ${new URL(baseUrl).host} is ready: ebsync sync --to ${crm}\n`,
    );
  });
}
