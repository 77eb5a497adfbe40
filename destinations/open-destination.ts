import { join } from 'node:path';
import { isPostgresUrl, maskCredentials } from '../store/postgres-connection.js';
import type { Destination } from './destination.js';
import { DestinationTargetError } from './errors.js';
import { openPostgresDestination } from './postgres-destination.js';
import { openSqliteDestination } from './sqlite-destination.js';

export type DestinationTarget =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema?: string };

/** The mirror's file when nothing else is said: `<EBSYNC_DATA_DIR>/mirror.db`. */
export function defaultMirrorFile(dataDir: string): string {
  return join(dataDir, 'mirror.db');
}

const TARGET_RULE =
  'expected sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE[?schema=NAME]';
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Reads a destination as the command line and settings give it: `sqlite:PATH` or a
 * `postgres://` URL, optionally with `?schema=NAME` to keep one business's tables apart.
 */
export function parseDestinationTarget(text: string): DestinationTarget {
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
      url.searchParams.delete('schema');
      return { kind: 'postgres', url: url.toString(), ...(schema === null ? {} : { schema }) };
    }
  }
  // Never echo a URL back whole: it may carry a password.
  throw new DestinationTargetError(
    `destination '${maskCredentials(text)}' is not allowed: ${TARGET_RULE}`,
  );
}

export function openDestination(target: string | DestinationTarget): Destination {
  const parsed = typeof target === 'string' ? parseDestinationTarget(target) : target;
  return parsed.kind === 'sqlite'
    ? openSqliteDestination(parsed.path)
    : openPostgresDestination(
        parsed.url,
        parsed.schema === undefined ? {} : { schema: parsed.schema },
      );
}
