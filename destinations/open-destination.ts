import { join } from 'node:path';
import {
  isPostgresUrl,
  sslModeProblem,
  maskCredentials,
  POSTGRES_URL_FORM,
  postgresDestinationId,
  sqliteIdentity,
} from '../config/database-locations.js';
import type { Config } from '../config/index.js';
import type { DatabaseOpeners } from './database-openers.js';
import type { Destination } from './destination.js';
import { DestinationTargetError } from './errors.js';
import { openHubSpotDestination } from './hubspot-destination.js';
import { openPipedriveDestination } from './pipedrive-destination.js';
import { openPostgresDestination } from './postgres-destination.js';
import { salesforceClientOptions, type RotatedRefreshTokens } from './salesforce-client.js';
import { openSalesforceDestination } from './salesforce-destination.js';
import { openSqliteDestination } from './sqlite-destination.js';

export type DestinationTarget =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema?: string }
  /** The CRM's address, token and mapping come from settings, never from the target. */
  | { readonly kind: 'hubspot' }
  | { readonly kind: 'pipedrive' }
  | { readonly kind: 'salesforce' };

/** What a CRM destination needs beside its target: `Config['crm']`. */
export type CrmSettings = Partial<Config['crm']>;

/** The mirror's file when nothing else is said: `<EBSYNC_DATA_DIR>/mirror.db`. */
export function defaultMirrorFile(dataDir: string): string {
  return join(dataDir, 'mirror.db');
}

const TARGET_RULE = `expected sqlite:PATH or ${POSTGRES_URL_FORM}[?schema=NAME], hubspot, pipedrive or salesforce`;
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
/**
 * Parameters of a Postgres URL the driver reads (TLS and connection options): anything else
 * was taken silently and made the same database a second destination.
 */
const CONNECTION_PARAMETERS: ReadonlySet<string> = new Set([
  'sslmode',
  'sslrootcert',
  'sslcert',
  'sslkey',
  'application_name',
  'connect_timeout',
  'options',
]);

/**
 * The one name of a destination however it is written (ledger keys, workflow and schedule
 * ids): a file by its absolute path, a Postgres database and schema without credentials or
 * connection parameters, a CRM by its kind. Throws DestinationTargetError as the parser does.
 */
export function destinationIdentity(text: string): string {
  const target = parseDestinationTarget(text);
  if (target.kind === 'sqlite') return sqliteIdentity(target.path);
  if (target.kind === 'postgres') return postgresDestinationId(target.url, target.schema);
  return target.kind;
}

/**
 * Reads a destination as the command line and settings give it: `sqlite:PATH` or a
 * `postgres://` URL, optionally with `?schema=NAME` to keep one business's tables apart, or
 * `hubspot` / `pipedrive` (the account of EBSYNC_<CRM>_URL and EBSYNC_<CRM>_TOKEN) or
 * `salesforce` (the org of EBSYNC_SALESFORCE_URL and its connected app's settings).
 */
export function parseDestinationTarget(text: string): DestinationTarget {
  if (text === 'hubspot' || text === 'hubspot:') return { kind: 'hubspot' };
  if (text === 'pipedrive' || text === 'pipedrive:') return { kind: 'pipedrive' };
  if (text === 'salesforce' || text === 'salesforce:') return { kind: 'salesforce' };
  if (text.startsWith('sqlite:')) {
    const path = text.slice('sqlite:'.length);
    if (path.trim() !== '') return { kind: 'sqlite', path };
  } else if (isPostgresUrl(text)) {
    let url: URL | undefined;
    try {
      url = new URL(text);
    } catch {
      url = undefined;
    }
    if (url?.hostname) {
      const schema = url.searchParams.get('schema');
      if (schema !== null && !SCHEMA_NAME.test(schema)) {
        throw new DestinationTargetError(
          `destination schema '${schema}' is not allowed: expected letters, digits and _ (not first), at most 63`,
        );
      }
      if (url.searchParams.getAll('schema').length > 1) {
        throw new DestinationTargetError('destination schema is given more than once: give one');
      }
      const sslProblem = sslModeProblem(text);
      if (sslProblem !== undefined) throw new DestinationTargetError(`destination ${sslProblem}`);
      url.searchParams.delete('schema');
      const unknown = [...url.searchParams.keys()].find((k) => !CONNECTION_PARAMETERS.has(k));
      if (unknown !== undefined) {
        throw new DestinationTargetError(
          `destination parameter '${unknown}' is not one ebsync passes on: expected schema or ${[...CONNECTION_PARAMETERS].join(', ')}`,
        );
      }
      return { kind: 'postgres', url: url.toString(), ...(schema === null ? {} : { schema }) };
    }
  }
  // Never echo a URL back whole: it may carry a password.
  throw new DestinationTargetError(
    `destination '${maskCredentials(text)}' is not allowed: ${TARGET_RULE}`,
  );
}

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
