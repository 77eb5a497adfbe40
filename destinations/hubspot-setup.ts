import {
  PropertyCreateFieldTypeEnum,
  PropertyCreateTypeEnum,
} from '@hubspot/api-client/lib/codegen/crm/properties/index.js';
import {
  HubSpotClient,
  hubspotRefusal,
  notUnique,
  type HubSpotClientOptions,
} from './hubspot-client.js';
import { DestinationSchemaError, DestinationTargetError } from './errors.js';
import { unsuitedMapping } from './hubspot-destination.js';
import { EVENT_KEY, LEAD_KEY, type HubSpotMapping } from './hubspot-mapping.js';

export interface SetupLine {
  property: string;
  outcome: 'created' | 'exists';
}

/**
 * Creates the unique-value deal properties the HubSpot destination upserts on. Safe to run
 * again: a property that exists with unique values is left alone; one without them cannot be
 * fixed (HubSpot never changes hasUniqueValue after creation), so that is an error. Given the
 * mapping, first checks that each mapped contact and deal property exists and its type takes
 * its column, as a pass does at its start.
 */
export async function setupHubSpot(
  options: HubSpotClientOptions,
  mapping?: HubSpotMapping,
  /** The config file the mapping came from, if it did: refusals name it. */
  mappingFile?: string,
): Promise<SetupLine[]> {
  const client = new HubSpotClient(options);
  const lines: SetupLine[] = [];
  // The mapping first: a setup it refuses changes nothing in the portal (the key properties
  // are not among the mapped ones, so the check does not need them).
  if (mapping) {
    const unsuited = await unsuitedMapping(client, mapping, mappingFile);
    if (unsuited) throw new DestinationSchemaError(unsuited);
  }
  for (const [name, label] of [
    [LEAD_KEY, 'Event Business lead id'],
    [EVENT_KEY, 'Event Business event id'],
  ] as const) {
    // https://developers.hubspot.com/docs/api/crm/properties — create a property; 409 when
    // the name is taken.
    const created = await client.call('POST /crm/v3/properties/deals', (sdk) =>
      sdk.crm.properties.coreApi.createWithHttpInfo('deals', {
        name,
        label,
        type: PropertyCreateTypeEnum.String,
        fieldType: PropertyCreateFieldTypeEnum.Text,
        groupName: 'dealinformation',
        hasUniqueValue: true,
      }),
    );
    if (created.status === 201 || created.status === 200) {
      lines.push({ property: name, outcome: 'created' });
      continue;
    }
    // Only a 409 means the name is taken. Any other refusal (a 403 for the schema scope, a 400)
    // is the reason setup failed: looking the property up after it would only answer 404.
    if (created.status === 404) {
      // Every HubSpot portal has this route: a 404 is an address that is not HubSpot's API.
      throw new DestinationTargetError(
        `${hubspotRefusal(created, 'POST /crm/v3/properties/deals').message}: check EBSYNC_HUBSPOT_URL (HubSpot's API origin, https://api.hubapi.com, with no path)`,
      );
    }
    if (created.status !== 409) throw hubspotRefusal(created, 'POST /crm/v3/properties/deals');
    const existing = await client.ok(`GET /crm/v3/properties/deals/${name}`, (sdk) =>
      sdk.crm.properties.coreApi.getByNameWithHttpInfo('deals', name),
    );
    if ((existing.body as { hasUniqueValue?: unknown }).hasUniqueValue !== true) {
      throw notUnique(name);
    }
    lines.push({ property: name, outcome: 'exists' });
  }
  return lines;
}
