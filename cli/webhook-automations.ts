import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { jsonText } from './shown-text.js';
import {
  CONNECTION_RULE_TEXT,
  CONNECTIONS_SUBCOMMANDS,
  isConnectionName,
} from '../config/connection-names.js';
import { PRODUCTION_HTTP, type Config } from '../config/index.js';
import { loadStartupConfig } from './startup-config.js';
import {
  sqliteAutomationStore,
  type AutomationStore,
  type EndpointFilters,
} from '../store/automation-endpoints.js';
import { RESOURCES } from '../destinations/record.js';
import { dataConverter } from '../worker/data-converter.js';
import { runAction, sealedOtherwiseError, UserError } from './errors.js';
import { FROM_STDIN, readStdin } from './secret-input.js';

const ACTIONS = ['written', 'deleted'];

/** The data dir's `webhooks.db`, the one the workers forward from. */
function automationStore(config: Config): AutomationStore {
  const codec = dataConverter(config).payloadCodecs?.[0];
  if (!codec) throw new Error('the data converter has no payload codec');
  return sqliteAutomationStore(join(config.dataDir, 'webhooks.db'), codec, {
    httpsOnly: config.mode === 'production',
  });
}

async function withStore<T>(fn: (store: AutomationStore) => T | Promise<T>): Promise<T> {
  const store = automationStore(loadStartupConfig());
  try {
    return await fn(store);
  } finally {
    store.close();
  }
}

function listFlag(flag: string, allowed: readonly string[] | undefined, value: string): string[] {
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  const wrong = allowed ? items.find((item) => !allowed.includes(item)) : undefined;
  if (wrong !== undefined || items.length === 0) {
    throw new UserError(
      `${flag}='${value}' is not allowed: expected a comma-separated list of ${allowed ? allowed.join(', ') : 'connection names'}`,
      2,
    );
  }
  return items;
}

/**
 * Hook URLs often carry a token in the path or query: only the origin is shown (for a scheme
 * without one, its scheme and host, or its scheme alone), `…` standing for anything after it.
 */
export function maskedUrl(url: string | URL): string {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  if (parsed.origin === 'null' && parsed.host === '') return `${parsed.protocol}…`;
  const origin = parsed.origin !== 'null' ? parsed.origin : `${parsed.protocol}//${parsed.host}`;
  const rest = (parsed.pathname !== '/' && parsed.pathname !== '') || parsed.search !== '';
  return rest ? `${origin}/…` : origin;
}

export interface AddFlags {
  types?: string;
  actions?: string;
  connections?: string;
}

async function add(name: string, given: string, flags: AddFlags): Promise<void> {
  // A hook URL often carries a token: '-' reads it from standard input, out of ps.
  const url = given === FROM_STDIN ? await readStdin() : given;
  checkEndpointName(name);
  if (url === '') {
    throw new UserError(
      given === FROM_STDIN
        ? 'url - read nothing from standard input: pipe the endpoint URL in'
        : 'url is empty: expected an http(s) URL',
      2,
    );
  }
  // Every message below names the URL masked, or not at all: it may carry the hook's token.
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UserError(
      'url does not parse as a URL (not shown: it may carry a token): expected an http(s) URL',
      2,
    );
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new UserError(`url '${maskedUrl(parsed)}' is not allowed: expected an http(s) URL`, 2);
  }
  // Changes carry customer records: production sends them over HTTPS only.
  if (parsed.protocol === 'http:' && loadStartupConfig().mode === 'production') {
    throw new UserError(`url '${maskedUrl(parsed)}' is not allowed: ${PRODUCTION_HTTP}`, 2);
  }
  const filters: EndpointFilters = {
    resources: flags.types === undefined ? [] : listFlag('--types', RESOURCES, flags.types),
    actions: flags.actions === undefined ? [] : listFlag('--actions', ACTIONS, flags.actions),
    connections:
      flags.connections === undefined
        ? []
        : listFlag('--connections', undefined, flags.connections),
  };
  const bad = filters.connections.find((c) => !isConnectionName(c));
  if (bad !== undefined) {
    throw new UserError(`--connections: '${bad}' is not a connection name`, 2);
  }
  // Taken before, with a note that the endpoint would get its changes once a connection of
  // that name was connected: 'ebsync connect' refuses these names.
  const reserved = filters.connections.find((c) =>
    (CONNECTIONS_SUBCOMMANDS as readonly string[]).includes(c),
  );
  if (reserved !== undefined) {
    throw new UserError(
      `--connections: '${reserved}' is not a connection name: 'ebsync connections ${reserved}' is a command, so 'ebsync connect' gives no connection that name`,
      2,
    );
  }
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const added = await withStore((store) =>
    store.add({
      name,
      url: parsed.href,
      secret,
      filters,
      createdAt: new Date().toISOString(),
      disabledAt: null,
      disabledReason: null,
    }),
  );
  if (!added) {
    throw new UserError(
      `endpoint '${name}' exists: 'ebsync webhooks endpoints enable ${name}' resumes a disabled one, 'ebsync webhooks endpoints remove ${name}' first to add it anew`,
    );
  }
  // The only time the secret is shown: the endpoint needs it to verify signatures.
  process.stdout.write(
    `added endpoint ${name} → ${maskedUrl(parsed)}\nsigning secret (shown once, keep it with the endpoint): ${secret}\n`,
  );
  if (filters.connections.length > 0) await noteUnknownConnections(filters.connections);
}

/**
 * `--connections` may name a connection made later, so a name no connection has is taken; but
 * a typo would leave the endpoint waiting for changes that never come, so it is said on
 * stderr. Temporal away: said too, the names unchecked.
 */
async function noteUnknownConnections(names: readonly string[]): Promise<void> {
  const config = loadStartupConfig();
  const [{ connectClient }, { runningConnectionIds }] = await Promise.all([
    import('../worker/temporal-client.js'),
    import('./connection-list.js'),
  ]);
  let running: string[];
  try {
    const { client, close } = await connectClient(config);
    try {
      running = await runningConnectionIds(client, config.temporal.taskQueue);
    } finally {
      await close();
    }
  } catch (error) {
    const why = error instanceof Error ? error.message.split('\n')[0] : String(error);
    process.stderr.write(`ebsync: note: --connections was not checked: ${why}\n`);
    return;
  }
  for (const unknown of names.filter((n) => !running.includes(n))) {
    process.stderr.write(
      `ebsync: note: no connection named '${unknown}' runs on task queue '${config.temporal.taskQueue}' now; ` +
        `the endpoint gets its changes once one is connected under that name ('ebsync connections' lists them)\n`,
    );
  }
}

function filterText(filters: EndpointFilters): string {
  const part = (label: string, items: string[]): string =>
    `${label}=${items.length === 0 ? 'all' : items.join(',')}`;
  return [
    part('types', filters.resources),
    part('actions', filters.actions),
    part('connections', filters.connections),
  ].join(' ');
}

/** An endpoint as `endpoints list` and the status show it: URL masked, never its secret. */
export interface EndpointView {
  name: string;
  url: string;
  filters: EndpointFilters;
  /** `refused`: this mode sends it nothing (plain http:// in production); nothing stored. */
  state: 'active' | 'breaker open' | 'disabled' | 'refused' | 'unreadable';
  /** Consecutive failed attempts. */
  failures: number;
  /** While the breaker is open: when it lets one probe through (ISO); otherwise null. */
  openUntil: string | null;
  /** Why it is disabled or refused. */
  disabledReason: string | null;
  createdAt: string;
}

/** The endpoints of a store with their breaker state at `now`. */
export async function endpointViews(
  store: AutomationStore,
  now: number = Date.now(),
): Promise<EndpointView[]> {
  return (await store.list()).map((endpoint) => {
    const breaker = store.breaker(endpoint.name);
    const open = breaker.openUntil > now;
    return {
      name: endpoint.name,
      // Empty when sealed with keys this process lacks (refusedReason says so).
      url: endpoint.url === '' ? '(sealed)' : maskedUrl(endpoint.url),
      filters: endpoint.filters,
      state:
        endpoint.unreadable !== undefined
          ? 'unreadable'
          : endpoint.refusedReason !== undefined
            ? 'refused'
            : endpoint.disabledAt !== null
              ? 'disabled'
              : open
                ? 'breaker open'
                : 'active',
      failures: breaker.failures,
      openUntil: open ? new Date(breaker.openUntil).toISOString() : null,
      disabledReason: endpoint.unreadable ?? endpoint.refusedReason ?? endpoint.disabledReason,
      createdAt: endpoint.createdAt,
    };
  });
}

/**
 * The data dir's endpoints for the status; none when no `webhooks.db` exists yet (reading
 * must not create it).
 */
export async function configuredEndpoints(config: Config): Promise<EndpointView[]> {
  if (!existsSync(join(config.dataDir, 'webhooks.db'))) return [];
  const store = automationStore(config);
  try {
    return await endpointViews(store);
  } finally {
    store.close();
  }
}

/** Endpoints whose URL and secret these keys cannot open: nothing goes to them. */
function unreadableEndpoints(names: readonly string[], why: string): UserError {
  return sealedOtherwiseError(
    'endpoint',
    names,
    why,
    'nothing is sent to it; give the workers and this shell the key that sealed it, or remove it and add it again',
  );
}

async function list(flags: { json?: boolean }): Promise<void> {
  const rows = await withStore((store) => endpointViews(store));
  const unreadable = rows.filter((row) => row.state === 'unreadable');
  const refuseUnreadable = (): void => {
    if (unreadable.length > 0)
      throw unreadableEndpoints(
        unreadable.map((row) => row.name),
        unreadable[0]?.disabledReason ?? 'unreadable',
      );
  };
  if (flags.json) {
    process.stdout.write(`${jsonText(rows, 2)}\n`);
    refuseUnreadable();
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('no automation endpoints (ebsync webhooks endpoints add)\n');
    return;
  }
  for (const row of rows) {
    process.stdout.write(
      `${row.name}  ${row.url}  ${row.state}${row.disabledReason ? ` (${row.disabledReason})` : ''}  ${filterText(row.filters)}\n`,
    );
  }
  refuseUnreadable();
}

async function deliveries(flags: {
  json?: boolean;
  endpoint?: string;
  limit: number;
}): Promise<void> {
  const { endpoint } = flags;
  if (endpoint !== undefined) checkEndpointName(endpoint, '--endpoint');
  const rows = await withStore(async (store) => {
    const found = store.deliveries({
      limit: flags.limit,
      ...(endpoint === undefined ? {} : { endpoint }),
    });
    // A removed endpoint's log is still shown; a name never logged nor added is a mistake.
    if (endpoint !== undefined && found.length === 0) {
      if (!(await store.list()).some((e) => e.name === endpoint)) throw noEndpoint(endpoint);
    }
    return found;
  });
  if (flags.json) {
    process.stdout.write(`${jsonText(rows, 2)}\n`);
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('no automation deliveries yet\n');
    return;
  }
  for (const row of rows) {
    process.stdout.write(
      `${row.at}  ${row.endpoint}  ${row.connectionId}/${row.resource}/${row.recordId} ${row.action}  ${row.status}${row.httpStatus === null ? '' : ` ${row.httpStatus}`}${row.reason === null ? '' : ` (${row.reason})`}  attempts=${row.attempts}  ${row.webhookId}\n`,
    );
  }
}

/**
 * An endpoint's name follows a connection's rule: both name files and lines of status. One
 * that breaks it names no endpoint there could be: bad input (exit 2), not a missing one.
 */
function checkEndpointName(name: string, flag = 'endpoint name'): void {
  if (!isConnectionName(name)) {
    throw new UserError(`${flag} '${name}' is not allowed: expected ${CONNECTION_RULE_TEXT}`, 2);
  }
}

function noEndpoint(name: string): UserError {
  return new UserError(
    `no endpoint named '${name}' ('ebsync webhooks endpoints list' shows the ones there are)`,
  );
}

/** `ebsync webhooks endpoints add <name> <url>`. */
export function endpointsAddCommand(name: string, url: string, flags: AddFlags): Promise<void> {
  return runAction(() => add(name, url, flags));
}

/** `ebsync webhooks endpoints list`. */
export function endpointsListCommand(flags: { json?: boolean }): Promise<void> {
  return runAction(() => list(flags));
}

/** `ebsync webhooks endpoints remove <name>`. */
export function endpointsRemoveCommand(name: string): Promise<void> {
  return runAction(async () => {
    checkEndpointName(name);
    const removed = await withStore((store) => store.remove(name));
    if (!removed) throw noEndpoint(name);
    process.stdout.write(`removed endpoint ${name}\n`);
  });
}

/** `ebsync webhooks endpoints enable <name>`: resumes a disabled endpoint, same secret. */
export function endpointsEnableCommand(name: string): Promise<void> {
  return runAction(async () => {
    checkEndpointName(name);
    const line = await withStore(async (store) => {
      const endpoint = (await store.list()).find((e) => e.name === name);
      if (!endpoint) throw noEndpoint(name);
      if (endpoint.unreadable !== undefined)
        throw unreadableEndpoints([endpoint.name], endpoint.unreadable);
      // This mode sends it nothing whatever is stored (an http:// one in production).
      if (endpoint.refusedReason !== undefined) {
        throw new UserError(`endpoint '${name}' stays refused: ${endpoint.refusedReason}`, 2);
      }
      // In development, one an earlier version disabled for plain http:// in production
      // (its stored reason) is enabled as any other.
      if (endpoint.disabledAt === null) return `endpoint ${name} is not disabled; nothing to do`;
      store.enable(name);
      return `enabled endpoint ${name} (was: ${endpoint.disabledReason ?? 'disabled'}); changes go to it again, signed with its secret as before`;
    });
    process.stdout.write(`${line}\n`);
  });
}

/** `ebsync webhooks deliveries`. */
export function deliveriesCommand(flags: {
  json?: boolean;
  endpoint?: string;
  limit: number;
}): Promise<void> {
  return runAction(() => deliveries(flags));
}
