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
