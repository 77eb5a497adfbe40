import { resolve } from 'node:path';
import type { Config } from './schema.js';

/**
 * Database locations as configuration gives them (the store URL, `--to` targets): which
 * engine a text names, and the forms of it that are safe to show or to key state by.
 */

/** `postgres://` or `postgresql://`, as libpq and node-postgres take them. */
export function isPostgresUrl(text: string): boolean {
  return /^postgres(ql)?:\/\//i.test(text);
}

/**
 * The form of a Postgres URL that messages name as allowed: a template, no credential, so the
 * output's last net (worker/redact.ts) leaves it as it is while masking the user's value.
 */
export const POSTGRES_URL_FORM = 'postgres://USER:PASSWORD@HOST:PORT/DATABASE';

/** The `sslmode` values ebsync passes to the driver: libpq's, and node-postgres's `no-verify`. */
export const SSL_MODES: readonly string[] = [
  'disable',
  'allow',
  'prefer',
  'require',
  'verify-ca',
  'verify-full',
  'no-verify',
];

/**
 * What is wrong with a Postgres URL's `sslmode`, or undefined when nothing is. Checked where
 * a URL comes in (EBSYNC_STORE_URL, `--to`): the driver takes a misspelt mode as verify-full
 * without a word, and refuses verify-ca without a CA only when it connects, in many lines.
 */
export function sslModeProblem(url: string): string | undefined {
  let params: URLSearchParams;
  try {
    params = new URL(url).searchParams;
  } catch {
    return undefined;
  }
  const modes = params.getAll('sslmode');
  if (modes.length > 1) return 'sslmode is given more than once: give one';
  const mode = modes[0];
  if (mode === undefined) return undefined;
  if (!SSL_MODES.includes(mode)) {
    return `sslmode '${mode.slice(0, 40)}' is not allowed: expected ${SSL_MODES.join(', ')}`;
  }
  if (mode === 'verify-ca' && !params.has('sslrootcert')) {
    return 'sslmode verify-ca needs sslrootcert=FILE, the CA that signed the server certificate (or use verify-full)';
  }
  return undefined;
}

/** Any `//user:password@` in a text (a URL someone typed) masked, for error messages. */
export function maskCredentials(text: string): string {
  return text.replace(/\/\/[^@/]*@/, '//***@');
}

/** The URL with user and password removed too: the same database however one logs in. */
export function postgresIdentity(url: string): string {
  const parsed = new URL(url);
  const database = parsed.pathname.replace(/^\//, '') || parsed.username || 'postgres';
  return `postgres://${parsed.hostname}:${parsed.port || '5432'}/${database}`;
}

/**
 * A Postgres destination as ledger keys, messages and workflow ids name it: the database
 * (postgresIdentity) and, when not `public`, its schema. URLs of one database and schema with
 * other credentials or connection parameters are one destination (hosts compare as written).
 */
export function postgresDestinationId(url: string, schema = 'public'): string {
  const id = new URL(postgresIdentity(url));
  if (schema !== 'public') id.searchParams.set('schema', schema);
  return id.toString();
}

/** `sqlite:PATH` names a file explicitly (the form `--to` and store locations take). */
export function sqlitePathOf(location: string): string {
  return location.startsWith('sqlite:') ? location.slice('sqlite:'.length) : location;
}

/** The location a file is known by in ledger keys and messages: absolute, so one per file. */
export function sqliteIdentity(file: string): string {
  return file === ':memory:' ? 'sqlite::memory:' : `sqlite:${resolve(file)}`;
}

/** Where the store (ledger, checkpoints, inbox) lives: EBSYNC_STORE_URL, or the data dir's file. */
export function storeLocation(config: Pick<Config, 'store' | 'dataDir'>): string {
  return config.store.url ?? `sqlite:${resolve(config.dataDir, 'store.db')}`;
}
