import { jsonText, report } from './shown-text.js';
import { existsSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import {
  CONNECTIONS_SUBCOMMANDS,
  CONNECTION_RULE_TEXT,
  isConnectionName,
} from '../config/connection-names.js';
import { type Config } from '../config/index.js';
import { INTEGRATION_KEY, INTEGRATION_KEY_RULE } from '../config/schema.js';
import { readPemFile } from '../worker/pem-files.js';
import { loadStartupConfig } from './startup-config.js';
import { createClient } from '../api/client.js';
import { apiKeyAuth, bearerAuth, type ClientAuth } from '../api/auth.js';
import { AuthenticationError, EbsError, NetworkError, PermissionError } from '../api/errors.js';
import { unreachableReason } from '../api/network-failures.js';
import { authorizationRequest, exchangeCode, validateCallback } from '../api/oauth.js';
import { connectClient } from '../worker/temporal-client.js';
import { connectionRateOf } from '../worker/rate-limits.js';
import { type RateLimitSignal } from '../workflows/rate-limit-types.js';
import { connectionWorkflow } from '../workflows/connection.js';
import {
  connectionWorkflowId,
  type ConnectionInput,
  type ConnectionKind,
  type ConnectionProfile,
  type ConnectionStatus,
  type Credentials,
  disconnectUpdate,
  reconnectUpdate,
  setPausedUpdate,
  statusQuery,
} from '../workflows/connection-types.js';
import { connectionGone } from '../activities/connection-tokens.js';
import { drainWorkflowId } from '../workflows/drain-types.js';
import {
  webhookRegistrations,
  webhookRegistrationsFile,
} from '../worker/webhook-registrations-file.js';
import { askConnections, silentLines, STATUS_DEADLINE_MS } from './connection-list.js';
import { runAction, UserError } from './errors.js';
import { formatDuration } from './options.js';
import { secretFrom } from './secret-input.js';
import { sameSecret } from '../config/secret-compare.js';
import { requireWorker, requireWorkerOf, runningTaskQueueOf, watchWorker } from './worker-check.js';
import { connectionStatusWithin, REQUEST_KEPT, updateOnceAnswered } from './connection-update.js';
import { listenRefusal } from './network-refusals.js';
import { listMirrorSchedules } from './schedule-views.js';
import { reconnectCommand } from './reconnect-advice.js';

/**
 * How long an update to a connection's workflow may wait for a worker. The check for a worker
 * counts one seen in the last two minutes, so a worker stopped a moment ago passes it, and
 * without a deadline the update would wait for good.
 */
const UPDATE_DEADLINE_MS = 30_000;

/** Exit code of a request no worker answered in time, which Temporal keeps and carries out later. */
const QUEUED_EXIT = 4;

/**
 * No worker answered the connection's workflow: before anything was sent to it, or (`read`)
 * when it was only asked its status.
 */
const unanswered =
  (workflowId: string, ms = UPDATE_DEADLINE_MS, read = false) =>
  (): UserError =>
    new UserError(
      `the connection's workflow '${workflowId}' got no answer within ${ms / 1000} s: no worker runs it${read ? '' : ', and nothing was sent to it'}; start one on the task queue it was started on ('ebsync worker' with that TEMPORAL_TASK_QUEUE) and try again`,
    );

/**
 * An update, sent once a worker answered the status query (connection-update.ts): when the
 * worker went away in between, the line says the request is kept, with its own exit code.
 */
function updateWithin<T>(
  client: Client,
  config: Config,
  workflowId: string,
  update: () => Promise<T>,
): Promise<T> {
  return updateOnceAnswered(client, workflowId, UPDATE_DEADLINE_MS, update, {
    unanswered: unanswered(workflowId),
    kept: kept(workflowId),
    watch: (ask) => watchWorker(client, config, queueOf(client, config, workflowId), ask),
  });
}

/** The task queue a connection's workflow runs on (this deployment's when it is not running). */
const queueOf = (client: Client, config: Config, workflowId: string) => async (): Promise<string> =>
  (await runningTaskQueueOf(client, workflowId)) ?? config.temporal.taskQueue;

/** Sent, and no worker answered: Temporal keeps the request (exit 4), so no "try again". */
const kept = (workflowId: string) => (): UserError =>
  new UserError(
    `no worker answered the connection's workflow '${workflowId}' within ${UPDATE_DEADLINE_MS / 1000} s; ${REQUEST_KEPT} ('ebsync worker' with the task queue it was started on starts one)`,
    QUEUED_EXIT,
  );

function serviceOptions(config: Config): {
  baseUrl: string;
  ca?: Buffer;
  allowInsecureLoopback?: boolean;
  routeOverrides?: Record<string, string>;
} {
  const baseUrl = config.service.baseUrl;
  if (!baseUrl)
    throw new UserError(
      'EBS_BASE_URL is not set: it names the service, e.g. https://host/api/v1/',
      2,
    );
  return {
    baseUrl,
    ...(config.service.caFile
      ? { ca: readPemFile('EBS_CA_FILE', config.service.caFile, 'CERTIFICATE') }
      : {}),
    ...(config.service.allowHttp ? { allowInsecureLoopback: true } : {}),
    ...(config.service.routeOverrides ? { routeOverrides: config.service.routeOverrides } : {}),
  };
}

interface ProbeResult {
  businessName?: string;
  /** Whether the credential may list leads: the one permission the probe shows. */
  readsLeads: boolean;
}

/**
 * One cheap call that proves the credential works, and the business's name when the service
 * shows it (the spec has no business endpoint: a lead's or event's brand_name stands in).
 */
async function probe(config: Config, auth: ClientAuth): Promise<ProbeResult> {
  const api = createClient({ ...serviceOptions(config), auth });
  try {
    const page = await api.leads.list({ per: 1 });
    const brand = page.data[0]?.attributes.brand_name;
    return brand ? { businessName: brand, readsLeads: true } : { readsLeads: true };
  } catch (error) {
    if (error instanceof PermissionError) return { readsLeads: false };
    if (error instanceof AuthenticationError)
      throw new UserError(`the service refused the credential: ${error.message}`);
    if (error instanceof NetworkError) {
      // The reason in words, once: the error's own message repeats the code got gave it.
      throw new UserError(
        `could not reach the service at ${new URL(config.service.baseUrl ?? '').origin}: ${unreachableReason(error.cause)}; check EBS_BASE_URL`,
      );
    }
    if (error instanceof EbsError)
      throw new UserError(`could not reach the service: ${error.message}`);
    throw error;
  }
}

/**
 * Connection names are one per namespace: a deployment on another task queue (staging beside
 * production, say) that connected the same name would hand its credentials to the other's
 * workflow, whose workers would then mirror this business into the other deployment's
 * destinations. Refused before anything is asked of the service or the browser, and again
 * when the connection is saved.
 */
async function requireOwnConnection(
  client: Client,
  config: Config,
  connectionId: string,
): Promise<void> {
  const { taskQueue, namespace } = config.temporal;
  const runsOn = await runningTaskQueueOf(client, connectionWorkflowId(connectionId));
  if (runsOn === null || runsOn === taskQueue) return;
  throw new UserError(
    `connection '${connectionId}' belongs to the deployment on task queue '${runsOn}', not this one's ('${taskQueue}', TEMPORAL_TASK_QUEUE) in namespace '${namespace}'; nothing was changed: connect under another --name, or run this with TEMPORAL_TASK_QUEUE=${runsOn} to reconnect it there`,
  );
}

/** Starts the connection workflow, or hands the new credentials to the one already running. */
export async function saveConnection(
  client: Client,
  config: Config,
  profile: ConnectionProfile,
  credentials: Credentials,
): Promise<ConnectionStatus> {
  const workflowId = connectionWorkflowId(profile.connectionId);
  const input: ConnectionInput = { profile, credentials };
  const { taskQueue } = config.temporal;
  try {
    await client.workflow.start(connectionWorkflow, { taskQueue, workflowId, args: [input] });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    await requireOwnConnection(client, config, profile.connectionId);
    await requireWorkerOf(client, config, workflowId);
    return updateWithin(client, config, workflowId, () =>
      client.workflow.getHandle(workflowId).executeUpdate(reconnectUpdate, {
        args: [
          {
            credentials,
            permissions: profile.permissions,
            ...(profile.businessName ? { businessName: profile.businessName } : {}),
            service: {
              kind: profile.kind,
              baseUrl: profile.baseUrl,
              ...(profile.authUrl !== undefined ? { authUrl: profile.authUrl } : {}),
              ...(profile.clientId !== undefined ? { clientId: profile.clientId } : {}),
            },
          },
        ],
      }),
    );
  }
  // The workflow was started with the credentials: with no worker to answer, the connection
  // is kept and becomes active when one runs it, so the line must not say "nothing was sent".
  return watchWorker(
    client,
    config,
    () => Promise.resolve(taskQueue),
    (signal) =>
      connectionStatusWithin(client, workflowId, UPDATE_DEADLINE_MS, kept(workflowId), signal),
    (line) => new UserError(`${line}; ${REQUEST_KEPT}`, QUEUED_EXIT),
  );
}

/** The browser's redirect that ended the wait, and the answer it is still waiting for. */
interface ArrivedCallback {
  url: URL;
  /** Answers the browser: connected only once the connection is made. */
  answer: (connected: boolean) => void;
}

const CALLBACK_PAGES = {
  connected:
    '<h1>ebsync is connected</h1><p>You can close this tab and return to the terminal.</p>',
  failed: '<h1>The connection was not made</h1><p>Return to the terminal for details.</p>',
  notOurs:
    '<h1>Not the approval ebsync is waiting for</h1><p>Return to the terminal: it is still waiting.</p>',
};

/**
 * Waits for the browser's redirect to http://127.0.0.1:<port>/callback. Only a request with
 * that Host (not a page elsewhere whose name points here), that path and the state of this
 * flow's authorization request ends the wait; any other is refused and the wait goes on. The
 * browser's answer waits until the code is exchanged and the connection saved.
 */
function listenForCallback(port: number): Promise<{
  server: Server;
  port: number;
  callback: Promise<ArrivedCallback>;
  expect: (state: string) => void;
}> {
  return new Promise((resolve, reject) => {
    let deliver: (arrived: ArrivedCallback) => void = () => undefined;
    const callback = new Promise<ArrivedCallback>((r) => (deliver = r));
    let expectedState: string | undefined;
    let expectedHost = '';
    let arrived = false;
    const page = (res: ServerResponse, status: number, html: string): void => {
      res.writeHead(status, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
      });
      res.end(html);
    };
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname !== '/callback') return page(res, 404, CALLBACK_PAGES.notOurs);
      const state = url.searchParams.get('state') ?? '';
      const ours =
        !arrived &&
        req.headers.host === expectedHost &&
        expectedState !== undefined &&
        sameSecret(state, expectedState);
      if (!ours) return page(res, 400, CALLBACK_PAGES.notOurs);
      arrived = true;
      let answered = false;
      deliver({
        url,
        // The first answer counts: success, or the failure a finally block reports.
        answer: (connected) => {
          if (answered) return;
          answered = true;
          page(
            res,
            connected ? 200 : 400,
            connected ? CALLBACK_PAGES.connected : CALLBACK_PAGES.failed,
          );
        },
      });
    });
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        listenRefusal(error, {
          host: '127.0.0.1',
          port,
          hostFrom: 'the redirect host',
          portFrom: '--redirect-port',
        }) ?? error,
      ),
    );
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : port;
      expectedHost = `127.0.0.1:${bound}`;
      resolve({
        server,
        port: bound,
        callback,
        expect: (state) => (expectedState = state),
      });
    });
  });
}

export interface ConnectFlags {
  name: string;
  apiKey?: string | boolean;
  clientId?: string;
  redirectPort: number;
  /** Milliseconds. */
  timeout: number;
}

interface Connected {
  status: ConnectionStatus;
  probe: ProbeResult;
}

async function connectApp(config: Config, client: Client, flags: ConnectFlags): Promise<Connected> {
  const authUrl = config.service.authUrl;
  const clientId = flags.clientId ?? config.service.clientId;
  if (!authUrl)
    throw new UserError(
      'EBS_AUTH_URL is not set: it names the authorization server of installed apps',
      2,
    );
  if (!clientId)
    throw new UserError('no OAuth client id: pass --client-id or set EBS_CLIENT_ID', 2);
  const ca = config.service.caFile
    ? readPemFile('EBS_CA_FILE', config.service.caFile, 'CERTIFICATE')
    : undefined;
  const { server, port, callback, expect } = await listenForCallback(flags.redirectPort);
  let arrived: ArrivedCallback | undefined;
  try {
    const redirectUri = `http://127.0.0.1:${port}/callback`;
    const request = await authorizationRequest({ authUrl, clientId, redirectUri });
    expect(request.state);
    process.stdout.write(
      `Open this address in a browser to approve ebsync:\n  ${request.url.toString()}\n`,
    );
    process.stdout.write(`Waiting for the approval on ${redirectUri} …\n`);
    arrived = await Promise.race([
      callback,
      new Promise<never>((_, reject) =>
        setTimeout(
          () =>
            reject(
              new UserError(
                `no approval arrived within ${formatDuration(flags.timeout)}; run ebsync connect again`,
              ),
            ),
          flags.timeout,
        ).unref(),
      ),
    ]);
    const { code } = validateCallback({
      authUrl,
      clientId,
      callback: arrived.url,
      expectedState: request.state,
    });
    const tokens = await exchangeCode({
      authUrl,
      clientId,
      code,
      redirectUri,
      codeVerifier: request.codeVerifier,
      ...(ca ? { ca } : {}),
    });
    const probed = await probe(
      config,
      bearerAuth(() => Promise.resolve(tokens.accessToken)),
    );
    const { businessName } = probed;
    const now = Date.now();
    const status = await saveConnection(
      client,
      config,
      {
        connectionId: flags.name,
        kind: 'installed_app',
        baseUrl: serviceOptions(config).baseUrl,
        authUrl,
        clientId,
        permissions: tokens.scope,
        ...(businessName ? { businessName } : {}),
      },
      {
        kind: 'oauth',
        accessToken: tokens.accessToken,
        refreshToken: tokens.refreshToken,
        accessExpiresAt: tokens.expiresAt,
        accessIssuedAt: now,
      },
    );
    arrived.answer(true);
    return { status, probe: probed };
  } finally {
    arrived?.answer(false);
    server.close();
  }
}

/**
 * The integration key of `connect --api-key`, checked before anything is sent: from
 * EBS_API_KEY (`--api-key` without a value), standard input (`--api-key -`), or, with a
 * warning, the value after the flag.
 */
async function integrationKey(config: Config, flags: ConnectFlags): Promise<string> {
  const keyRule = (key: string) => (INTEGRATION_KEY.test(key) ? undefined : INTEGRATION_KEY_RULE);
  const apiKey = await secretFrom(
    flags.apiKey,
    config.service.apiKey,
    { flag: '--api-key', env: 'EBS_API_KEY', what: 'integration key' },
    keyRule,
  );
  if (!apiKey) {
    throw new UserError(
      'no integration key: set EBS_API_KEY, or pass --api-key - with the key on standard input',
      2,
    );
  }
  return apiKey;
}

async function connectKey(
  config: Config,
  client: Client,
  flags: ConnectFlags,
  apiKey: string,
): Promise<Connected> {
  const probed = await probe(config, apiKeyAuth(apiKey));
  const { businessName } = probed;
  const status = await saveConnection(
    client,
    config,
    {
      connectionId: flags.name,
      kind: 'integration_key',
      baseUrl: serviceOptions(config).baseUrl,
      permissions: [],
      ...(businessName ? { businessName } : {}),
    },
    { kind: 'apiKey', apiKey },
  );
  return { status, probe: probed };
}

/**
 * What is known of a connection's permissions. An app's token response lists them; the spec
 * lists none for an integration key, which holds its creator's permissions or fewer.
 */
function permissionsKnown(status: ConnectionStatus): string {
  if (status.kind === 'installed_app') return `${status.permissions.length} permissions`;
  return "permissions not listed by the service: a key has its creator's or fewer";
}

/** What a paused connection's syncs do, and what ends it. */
function pausedLine(id: string, what: string): string {
  return `${what}: ${id}; its syncs wait until 'ebsync connections resume ${id}'`;
}

function connectedLine({ status, probe: probed }: Connected): string {
  const leads = probed.readsLeads ? 'leads readable' : 'leads not readable (403)';
  const line = `connected: ${status.businessName ?? 'the business'} (connection ${status.connectionId}, ${status.kind}, ${permissionsKnown(status)}; ${leads})`;
  // A reconnect keeps a pause: said, or the user would wait for syncs that do not run.
  return status.state === 'paused'
    ? `${line}\n${pausedLine(status.connectionId, 'still paused')}`
    : line;
}

/**
 * What to run for a connection that needs re-authorization. `ebsync status` and `ebsync sync`
 * said it and the listing, where a user looks first, did not: the state and the refusal left
 * them to guess the command, and `ebsync connect` without --name connects another connection.
 */
function reauthAdvice(status: ConnectionStatus): string | undefined {
  if (status.state !== 'needs_reauth') return undefined;
  return `run '${reconnectCommand(status.connectionId, status.kind)}'`;
}

/**
 * `ebsync connections`: a line per connection, its id, state and kind in columns as wide as
 * their longest value (`acme      active  installed_app    Acme Photo Booths`), then the rest.
 */
export function connectionTable(statuses: readonly ConnectionStatus[]): string {
  const rows = statuses.map((status) => {
    const who = status.businessName ? `${status.businessName}` : '(business name not shown)';
    const expiry = status.accessExpiresAt
      ? `, token until ${new Date(status.accessExpiresAt).toISOString()}`
      : '';
    const error = status.lastError ? `, last error: ${status.lastError}` : '';
    const fix = reauthAdvice(status);
    const advice = fix ? `; ${fix}` : '';
    const limited = status.lastRateLimit
      ? `, rate-limited ${new Date(status.lastRateLimit.at).toISOString()}`
      : '';
    return [
      status.connectionId,
      status.state,
      status.kind,
      `${who}${expiry}${error}${advice}${limited}`,
    ];
  });
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  '))
    .join('\n');
}

/** The last 429 / 403 rate-limit answer: when, what it said, which call. */
function rateLimitLine(signal: RateLimitSignal | null | undefined): string {
  if (!signal) return '(never)';
  const wait =
    signal.retryAfterMs === null ? 'no Retry-After' : `Retry-After ${signal.retryAfterMs / 1000}s`;
  return `${new Date(signal.at).toISOString()}  ${signal.status ?? '?'} on ${signal.operation ?? '?'}, ${wait}`;
}

function inspect(status: ConnectionStatus, rate: number | null | undefined): string {
  const rows: [string, string][] = [
    ['connection', status.connectionId],
    ['state', status.state],
    ['kind', status.kind],
    ['business', status.businessName ?? '(not shown by the service)'],
    ['base URL', status.baseUrl],
    [
      'permissions',
      status.kind === 'installed_app'
        ? status.permissions.join(' ') || '(none granted)'
        : `(${permissionsKnown(status)})`,
    ],
    ['connected at', new Date(status.connectedAt).toISOString()],
  ];
  if (status.reconnectedAt)
    rows.push(['reconnected at', new Date(status.reconnectedAt).toISOString()]);
  rows.push(['refreshes', String(status.refreshCount)]);
  if (status.accessExpiresAt)
    rows.push(['token until', new Date(status.accessExpiresAt).toISOString()]);
  rows.push(['last error', status.lastError ?? '(none)']);
  const fix = reauthAdvice(status);
  if (fix) rows.push(['to fix', fix]);
  rows.push([
    'rate limit',
    rate === undefined
      ? '(the task queue did not say)'
      : rate === null
        ? 'none set on the task queue'
        : `${rate} requests/s`,
  ]);
  rows.push(['last limited', rateLimitLine(status.lastRateLimit)]);
  // As wide as the longest label ('reconnected at' ran into its value at a fixed 13).
  const width = Math.max(...rows.map(([k]) => k.length)) + 1;
  return rows.map(([k, v]) => `${k.padEnd(width)}${v}`).join('\n') + '\n';
}

/** Runs fn with a Temporal client, once a worker is known to poll the task queue. */
async function withWorker<T>(
  fn: (client: Client, config: Config) => Promise<T>,
  config: Config = loadStartupConfig(),
): Promise<T> {
  const { client, close } = await connectClient(config);
  try {
    await requireWorker(client, config);
    return await fn(client, config);
  } finally {
    await close();
  }
}

function checkName(name: string, what = '--name'): string {
  if (!isConnectionName(name)) {
    throw new UserError(`${what}='${name}' is not allowed: expected ${CONNECTION_RULE_TEXT}`, 2);
  }
  return name;
}

/** fn with connection `id`'s workflow; an unknown id becomes one line. */
async function withConnection<T>(
  client: Client,
  config: Config,
  id: string,
  fn: (workflowId: string) => Promise<T>,
): Promise<T> {
  const handle = client.workflow.getHandle<typeof connectionWorkflow>(connectionWorkflowId(id));
  try {
    await requireWorkerOf(client, config, handle.workflowId);
    return await fn(handle.workflowId);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    // Updates to a workflow that has ended fail as "not found" too: it was disconnected. Said
    // in the words `ebsync sync` and the worker use for the same connection.
    throw new UserError(
      (await connectionGone(client, id).catch(() => null)) ?? `no connection named '${id}'`,
    );
  }
}

type ConnectionHandle = WorkflowHandle<typeof connectionWorkflow>;

/** The action of a command on connection `<id>`: an update, once a worker answers. */
function connectionAction<R>(
  update: (handle: ConnectionHandle) => Promise<R>,
  report: (result: R, id: string, client: Client, config: Config) => void | Promise<void>,
) {
  return (id: string) =>
    runAction(async () => {
      checkName(id, 'id');
      await withWorker(async (client, config) => {
        const result = await withConnection(client, config, id, (workflowId) =>
          updateWithin(client, config, workflowId, () =>
            update(client.workflow.getHandle<typeof connectionWorkflow>(workflowId)),
          ),
        );
        await report(result, id, client, config);
      });
    });
}

/** `ebsync connections pause|resume <id>`: the one switch the connection workflow keeps. */
export function pauseCommand(name: 'pause' | 'resume', id: string): Promise<void> {
  const paused = name === 'pause';
  const wanted = paused ? 'paused' : 'active';
  return connectionAction(
    async (handle) => {
      // The state before, to say when the switch was already where it was asked to go: a
      // 'resumed' for a connection that was never paused tells its user something happened.
      const before = (await handle.query(statusQuery)).state;
      return { before, status: await handle.executeUpdate(setPausedUpdate, { args: [paused] }) };
    },
    ({ before, status }, id) => {
      if (status.state !== wanted) {
        const reason = status.lastError ? ` (${status.lastError})` : '';
        throw new UserError(
          `connection '${id}' is ${status.state}${reason}; ${name} applies to active or paused connections only`,
        );
      }
      if (before === wanted) {
        process.stdout.write(
          paused
            ? `${pausedLine(id, 'already paused')}\n`
            : `not paused: ${id}; nothing to resume, its syncs run\n`,
        );
        return;
      }
      process.stdout.write(paused ? `${pausedLine(id, 'paused')}\n` : `resumed: ${id}\n`);
    },
  )(id);
}

/** `ebsync connect`. */
export function connectCommand(flags: ConnectFlags): Promise<void> {
  return runAction(async () => {
    checkName(flags.name);
    if ((CONNECTIONS_SUBCOMMANDS as readonly string[]).includes(flags.name)) {
      throw new UserError(
        `--name='${flags.name}' is not allowed: 'ebsync connections ${flags.name}' is a command, so a connection of that name could not be shown; choose another name`,
        2,
      );
    }
    const config = loadStartupConfig();
    const apiKey = flags.apiKey !== undefined ? await integrationKey(config, flags) : undefined;
    await withWorker(async (client) => {
      await requireOwnConnection(client, config, flags.name);
      const connected =
        apiKey !== undefined
          ? await connectKey(config, client, flags, apiKey)
          : await connectApp(config, client, flags);
      process.stdout.write(`${report(connectedLine, connected)}\n`);
    }, config);
  });
}

/** `ebsync connections [id]`. */
export function connectionsCommand(
  id: string | undefined,
  flags: { json?: boolean },
): Promise<void> {
  return runAction(async () => {
    if (id !== undefined) checkName(id, 'id');
    await withWorker(async (client, config) => {
      if (id !== undefined) {
        const one = await withConnection(client, config, id, (workflowId) =>
          watchWorker(client, config, queueOf(client, config, workflowId), (signal) =>
            connectionStatusWithin(
              client,
              workflowId,
              STATUS_DEADLINE_MS,
              unanswered(workflowId, STATUS_DEADLINE_MS, true),
              signal,
            ),
          ),
        );
        const rate = await connectionRateOf(client.workflowService, config.temporal).catch(
          () => undefined,
        );
        process.stdout.write(
          flags.json ? `${jsonText({ ...one, rateLimit: rate }, 2)}\n` : report(inspect, one, rate),
        );
        return;
      }
      // Those that answered are listed even when another could not be read; then it fails,
      // naming which and why.
      const { statuses: all, silent } = await watchWorker(
        client,
        config,
        () => Promise.resolve(config.temporal.taskQueue),
        (signal) =>
          client.withAbortSignal(signal, () => askConnections(client, config, STATUS_DEADLINE_MS)),
      );
      if (flags.json) process.stdout.write(`${jsonText(all, 2)}\n`);
      else if (all.length === 0 && silent.length === 0)
        process.stdout.write('no connections; add one with ebsync connect\n');
      else if (all.length > 0) process.stdout.write(`${report(connectionTable, all)}\n`);
      if (silent.length > 0) {
        throw new UserError(silentLines(silent, config.temporal.taskQueue, STATUS_DEADLINE_MS));
      }
    });
  });
}

/** Credentials an app cannot revoke (the spec has no call for them): what to tell the user. */
const NOT_REVOKED: Record<Exclude<ConnectionKind, 'installed_app'>, string> = {
  integration_key:
    "its integration key still works: revoke it in the service's settings, the service gives apps no call to revoke a key",
  legacy_app: 'its app credentials still work: the service gives apps no call to revoke them',
};

/**
 * What disconnect did, by kind: an installed app's grant is revoked at the service; an
 * integration key or legacy app credentials are only forgotten here, and the line says so.
 */
function disconnectedLine(id: string, status: ConnectionStatus): string {
  if (status.kind === 'installed_app') {
    return `disconnected: ${id} (${status.lastError ?? 'its grant revoked at the service'})`;
  }
  return `disconnected: ${id} (forgotten here; ${NOT_REVOKED[status.kind]})`;
}

/**
 * Disconnected, but not all that was asked: the revoke failed, so the grant may work on at
 * the service (exit 1, what to do); undefined when it was revoked or there is none to revoke.
 */
export function grantLeftLive(id: string, status: ConnectionStatus): string | undefined {
  if (status.kind !== 'installed_app') return undefined;
  if (status.lastError?.startsWith('revoke pending')) {
    return `the grant of connection '${id}' is not revoked yet (${status.lastError}); if the authorization server does not come back, remove the app's access in the business's settings at the service`;
  }
  if (!status.lastError?.startsWith('revoke failed')) return undefined;
  return `the grant of connection '${id}' may still be live at the service (${status.lastError}): ebsync no longer keeps its tokens, so remove the app's access in the business's settings at the service`;
}

/** `ebsync disconnect <id>`. */
export function disconnectCommand(id: string): Promise<void> {
  return connectionAction(
    (handle) => handle.executeUpdate(disconnectUpdate),
    async (status, id, client, config) => {
      process.stdout.write(`${report(disconnectedLine, id, status)}\n`);
      const webhooks = await forgetWebhooks(client, config, id);
      for (const line of webhooks.lines) process.stdout.write(`${line}\n`);
      // Said after what was done, never in its place: a listing that fails is one line too.
      const schedules = await schedulesLeft(client, id, status.kind).catch(
        (error: unknown) =>
          `schedules: its schedules could not be listed (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); 'ebsync schedule list' shows them`,
      );
      if (schedules) process.stdout.write(`${schedules}\n`);
      const live = grantLeftLive(id, status);
      if (live) throw new UserError(live);
      // A drain asked to stop that has not yet: Temporal keeps the request, as for an update.
      if (webhooks.drainStopping) process.exitCode = QUEUED_EXIT;
    },
  )(id);
}

/**
 * A disconnected connection's webhooks: its registration on this machine (the signing secret
 * is one of its credentials) goes, so the receiver refuses its deliveries from now on, and its
 * drain stops (it could read nothing more). Notices the drain had not applied stay in the
 * inbox, for a connection connected again under the same name. The endpoint at the service
 * is the service's: the line says to remove it there.
 */
async function forgetWebhooks(
  client: Client,
  config: Config,
  id: string,
): Promise<{ lines: string[]; drainStopping: boolean }> {
  const lines: string[] = [];
  let drainStopping = false;
  // Looked for, never made: a machine without registrations gets no file.
  if (existsSync(webhookRegistrationsFile(config))) {
    const registrations = webhookRegistrations(config);
    try {
      const registration = await registrations.get(id);
      if (registration && registrations.remove(id)) {
        const endpoint = registration.endpointId ? ` (endpoint ${registration.endpointId})` : '';
        lines.push(
          `webhooks: its registration removed here; the receiver refuses deliveries to ${registration.url} from now on: remove that endpoint${endpoint} at the service too`,
        );
      }
    } finally {
      registrations.close();
    }
  }
  const drain = client.workflow.getHandle(drainWorkflowId(id));
  const running = await drain.describe().then(
    (d) => d.status.name === 'RUNNING',
    (error: unknown) => {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    },
  );
  if (running) {
    await drain.cancel();
    // Cancelling only asks: the drain ends at its worker's next step. The line says what is so.
    const stopped = await drainEnded(client, drain);
    drainStopping = !stopped;
    lines.push(
      stopped
        ? 'webhooks: its drain stopped; notices it had not applied stay in the inbox'
        : `webhooks: its drain was asked to stop and had not within ${DRAIN_STOP_MS / 1_000} s (it stops when a worker next runs it); notices it had not applied stay in the inbox`,
    );
  }
  return { lines, drainStopping };
}

/**
 * A disconnected connection's schedules stay (a connect under the same name makes them good
 * again), but until then each pass they fire fails: said, with how to remove them. It used
 * to be left for 'ebsync status' to show failing.
 */
async function schedulesLeft(
  client: Client,
  id: string,
  kind: string,
): Promise<string | undefined> {
  const { views } = await listMirrorSchedules(client, id);
  if (views.length === 0) return undefined;
  const firing = views.filter((view) => !view.paused).length;
  const ids = views.map((view) => view.scheduleId).join(', ');
  const fail =
    firing === 0
      ? 'all paused'
      : `${firing === views.length ? 'each' : `${firing} not paused, each`} starts passes that fail until '${reconnectCommand(id, kind)}' connects it again`;
  return `schedules: ${views.length === 1 ? 'its schedule stays' : `its ${views.length} schedules stay`} (${ids}), ${fail}; 'ebsync schedule delete ID' removes one`;
}

/** How long disconnect waits for a cancelled drain to end before saying it was only asked. */
const DRAIN_STOP_MS = 15_000;

/** Whether the drain ended (however: cancelled, or gone) within DRAIN_STOP_MS. */
async function drainEnded(client: Client, drain: WorkflowHandle): Promise<boolean> {
  try {
    await client.withDeadline(Date.now() + DRAIN_STOP_MS, () => drain.result());
    return true;
  } catch (error) {
    // A cancelled workflow's result is a WorkflowFailedError; one gone is not found. Anything
    // else (the deadline, Temporal away) leaves the end unconfirmed.
    return error instanceof WorkflowFailedError || error instanceof WorkflowNotFoundError;
  }
}
