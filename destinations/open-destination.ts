import type { Config } from '../config/index.js';
import type { DatabaseOpeners } from './database-openers.js';
import type { Destination } from './destination.js';
import { DestinationTargetError } from './errors.js';
import { parseDestinationTarget, type DestinationTarget } from './destination-targets.js';
import { openHubSpotDestination } from './hubspot-destination.js';
import { openPipedriveDestination } from './pipedrive-destination.js';
import { openPostgresDestination } from './postgres-destination.js';
import { salesforceClientOptions, type RotatedRefreshTokens } from './salesforce-client.js';
import { openSalesforceDestination } from './salesforce-destination.js';
import { openSqliteDestination } from './sqlite-destination.js';

export {
  defaultMirrorFile,
  destinationIdentity,
  parseDestinationTarget,
  type DestinationTarget,
} from './destination-targets.js';

/** What a CRM destination needs beside its target: `Config['crm']`. */
export type CrmSettings = Partial<Config['crm']>;

/**
 * A CRM's settings are read by the workers that write to it, not by the command that starts
 * a pass: said where one is missing, since the shell that ran `ebsync sync` may have it set.
 */
const WHERE_WORKERS_RUN = "in the workers' environment and restart them";

/** What a destination may keep beside its settings: the refresh tokens a CRM rotated. */
export interface DestinationKeeping {
  refreshTokens?: RotatedRefreshTokens;
}

/**
 * Opens the destination a target names. `openers` open its database when it is SQLite or
 * Postgres (store/database-openers.ts has them; destinations/ may not import store/).
 */
export function openDestination(
  openers: DatabaseOpeners,
  target: string | DestinationTarget,
  crm?: CrmSettings,
  keeping: DestinationKeeping = {},
): Destination {
  const parsed = typeof target === 'string' ? parseDestinationTarget(target) : target;
  if (parsed.kind === 'hubspot') {
    const hubspot = crm?.hubspot;
    if (!hubspot?.token) {
      throw new DestinationTargetError(
        `destination hubspot needs a private-app token: set EBSYNC_HUBSPOT_TOKEN ${WHERE_WORKERS_RUN} (see docs/crm.md)`,
      );
    }
    return openHubSpotDestination({
      baseUrl: hubspot.baseUrl,
      token: hubspot.token,
      ...(hubspot.mapping ? { mapping: hubspot.mapping } : {}),
      ...(hubspot.mappingFile ? { mappingFile: hubspot.mappingFile } : {}),
    });
  }
  if (parsed.kind === 'pipedrive') {
    const pipedrive = crm?.pipedrive;
    if (!pipedrive?.token) {
      throw new DestinationTargetError(
        `destination pipedrive needs an API token: set EBSYNC_PIPEDRIVE_TOKEN ${WHERE_WORKERS_RUN} (see docs/crm.md)`,
      );
    }
    return openPipedriveDestination({
      baseUrl: pipedrive.baseUrl,
      token: pipedrive.token,
      ...(pipedrive.mapping ? { mapping: pipedrive.mapping } : {}),
      ...(pipedrive.mappingFile ? { mappingFile: pipedrive.mappingFile } : {}),
    });
  }
  if (parsed.kind === 'salesforce') {
    let options: ReturnType<typeof salesforceClientOptions>;
    try {
      options = salesforceClientOptions(crm?.salesforce);
    } catch (error) {
      if (!(error instanceof DestinationTargetError)) throw error;
      throw new DestinationTargetError(`${error.message}; ${WHERE_WORKERS_RUN}`);
    }
    return openSalesforceDestination({
      ...options,
      ...(crm?.salesforce?.mapping ? { mapping: crm.salesforce.mapping } : {}),
      ...(crm?.salesforce?.mappingFile ? { mappingFile: crm.salesforce.mappingFile } : {}),
      ...(keeping.refreshTokens ? { refreshTokens: keeping.refreshTokens } : {}),
    });
  }
  return parsed.kind === 'sqlite'
    ? openSqliteDestination(openers, parsed.path)
    : openPostgresDestination(
        openers,
        parsed.url,
        parsed.schema === undefined ? {} : { schema: parsed.schema },
      );
}
