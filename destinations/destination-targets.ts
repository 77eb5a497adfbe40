import { join } from 'node:path';
import {
  isPostgresUrl,
  sslModeProblem,
  maskCredentials,
  POSTGRES_URL_FORM,
  postgresDestinationId,
  sqliteIdentity,
} from '../config/database-locations.js';
import { DestinationTargetError } from './errors.js';

/*
 * What a destination target says and what it is called, apart from opening one: the commands
 * that only name a destination (ebsync sync, schedule) load none of the CRM clients and
 * database drivers that open-destination.ts brings.
 */

export type DestinationTarget =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema?: string }
  /** The CRM's address, token and mapping come from settings, never from the target. */
  | { readonly kind: 'hubspot' }
  | { readonly kind: 'pipedrive' }
  | { readonly kind: 'salesforce' };

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

/** A CRM account's id as the ledger keeps it: the CRM and the host of its API or login URL. */
export function crmDestinationId(
  kind: 'hubspot' | 'pipedrive' | 'salesforce',
  url: string,
): string {
  return `${kind}:${new URL(url).host}`;
}

/**
 * The `--to` that names a destination, from its kind and ledger id: a database's id is a
 * target already (a path, or a URL without its login); a CRM's is its kind, the account
 * coming from settings. What a refusal prints for the user to run.
 */
export function targetOfLedgerId(kind: string, id: string): string {
  return kind === 'sqlite' || kind === 'postgres' ? id : kind;
}

/**
 * The id a destination's describe() gives (its ledger key), from the target and, for a CRM,
 * the address in settings: what a command that opens no destination forgets in the ledger.
 */
export function ledgerDestinationId(
  text: string,
  crmUrls: Readonly<Record<'hubspot' | 'pipedrive' | 'salesforce', string>>,
): string {
  const target = parseDestinationTarget(text);
  if (target.kind === 'sqlite' || target.kind === 'postgres') return destinationIdentity(text);
  return crmDestinationId(target.kind, crmUrls[target.kind]);
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
    // A folder is no file: `sqlite:out/` made a file named `out` (the path resolved without
    // its slash), which nobody asked for.
    if (path.endsWith('/')) {
      throw new DestinationTargetError(
        `destination sqlite:${path} names a folder: expected sqlite:PATH of a file (e.g. sqlite:${path}mirror.db)`,
      );
    }
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
