import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { configSchema, type Config } from './schema.js';
import { SETTINGS, settingByPath, type Setting } from './settings.js';

/** Bad configuration: never retryable, the user has to change a setting. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly retryable = false;
  /** One line per bad setting, each naming the setting, its (masked) value and what is allowed. */
  readonly lines: readonly string[];
  constructor(lines: readonly string[]) {
    super(lines.join('\n'));
    this.lines = lines;
  }
}

type Source = { kind: 'env'; setting: Setting } | { kind: 'file'; file: string; path: string };

/** Shows that a secret was set, and how long it is, but none of its characters. */
export function maskSecret(value: string): string {
  return `****(${value.length} chars)`;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1] ?? path] = value;
}

function getPath(source: unknown, path: string): unknown {
  let node = source;
  for (const part of path.split('.')) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/**
 * V8's JSON.parse messages quote the file around the mistake ("Unexpected token 'c', ..."apiKey":
 * cloud-key-"... is not valid JSON"): that piece can span lines and hold a secret, so keep only
 * the part before it, on one line.
 */
function jsonProblem(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message
    .replace(/,\s*(?:\.\.\.)?".*$/s, '')
    .replace(/\s+/g, ' ')
    .trim();
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError([
      `EBSYNC_CONFIG='${file}' cannot be read (${code}); expected a JSON file`,
    ]);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError([
      `EBSYNC_CONFIG='${file}' is not valid JSON (${jsonProblem(error)}); expected an object of settings`,
    ]);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError([`EBSYNC_CONFIG='${file}' must hold a JSON object of settings`]);
  }
  return parsed as Record<string, unknown>;
}

function describeValue(value: unknown, secret: boolean): string {
  if (value === undefined) return '(missing)';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  // A URL may carry credentials (https://user:secret@host): mask them like any secret.
  return `'${secret ? maskSecret(text) : text.replace(/(\/\/[^/\s:@]+):([^@\s/]+)@/g, '$1:****@')}'`;
}

/**
 * Every setting a parsed file gives, by its dotted path: nested (`{"temporal": {"address":
 * …}}`) or with the dots in its key (`{"temporal.address": …}`), as the README writes the
 * paths. A setting whose value is an object (a mapping) ends the walk: its keys are its own.
 * A path given twice (both ways) is refused rather than one of them silently winning.
 */
function fileSettings(
  file: string,
  node: unknown,
  known: ReadonlySet<string>,
  prefix = '',
  out = new Map<string, unknown>(),
): Map<string, unknown> {
  if (typeof node !== 'object' || node === null || Array.isArray(node) || known.has(prefix)) {
    if (out.has(prefix)) {
      throw new ConfigError([`EBSYNC_CONFIG='${file}' gives the setting '${prefix}' twice`]);
    }
    out.set(prefix, node);
    return out;
  }
  for (const [key, value] of Object.entries(node)) {
    fileSettings(file, value, known, prefix ? `${prefix}.${key}` : key, out);
  }
  return out;
}

/**
 * Reads configuration from an optional JSON file (EBSYNC_CONFIG) overlaid by environment
 * variables. Empty environment variables count as unset. Throws ConfigError on bad input.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, unknown> = {};
  const sources = new Map<string, Source>();

  const file = env.EBSYNC_CONFIG;
  if (file) {
    // The file names no other file: configFile is EBSYNC_CONFIG's own path.
    const known = new Set(SETTINGS.map((s) => s.path).filter((path) => path !== 'configFile'));
    const given = fileSettings(file, readConfigFile(file), known);
    const unknown = [...given.keys()].filter((path) => !known.has(path));
    if (unknown.length > 0) {
      throw new ConfigError(
        unknown.map(
          (path) =>
            `EBSYNC_CONFIG='${file}' has an unknown setting '${path}'; allowed: ${[...known].join(', ')}`,
        ),
      );
    }
    for (const [path, value] of given) {
      setPath(raw, path, value);
      sources.set(path, { kind: 'file', file, path });
    }
  }
  for (const setting of SETTINGS) {
    const value = env[setting.env];
    if (value !== undefined && value !== '') {
      setPath(raw, setting.path, value);
      sources.set(setting.path, { kind: 'env', setting });
    }
  }

  // A CRM mapping is checked again by its destination (columns, reserved fields), beyond
  // config/: the file it came from goes with it, so that refusal names what the user wrote.
  for (const crm of ['hubspot', 'pipedrive', 'salesforce']) {
    const source = sources.get(`crm.${crm}.mapping`);
    if (source?.kind === 'file') setPath(raw, `crm.${crm}.mappingFile`, source.file);
  }

  const result = configSchema.safeParse(raw);
  if (result.success) return result.data;
  throw new ConfigError(formatIssues(result.error, raw, sources));
}

function formatIssues(
  error: z.ZodError,
  raw: Record<string, unknown>,
  sources: Map<string, Source>,
): string[] {
  const lines = new Map<string, string>();
  for (const issue of error.issues) {
    const path = issue.path.map(String).join('.');
    if (lines.has(path)) continue;
    const setting = settingByPath(path);
    const source = sources.get(path);
    const name =
      source?.kind === 'file'
        ? `${source.path} in ${source.file}`
        : (setting?.env ?? (path || 'configuration'));
    lines.set(path, problemLine(name, getPath(raw, path), setting?.secret ?? false, issue.message));
  }
  return [...lines.values()];
}

const problemLine = (name: string, value: unknown, secret: boolean, message: string): string =>
  `${name}=${describeValue(value, secret)} is not allowed: ${message}`;

/**
 * The line for a setting that loaded but that a check beyond config/ refused (route overrides
 * against api/'s route table): named and shown as loadConfig names and shows a bad setting.
 */
export function settingProblem(path: string, value: unknown, message: string): string {
  const setting = settingByPath(path);
  return problemLine(setting?.env ?? path, value, setting?.secret ?? false, message);
}
