import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { Option, type Command } from 'commander';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import { loadConfig, type Config } from '../config/index.js';
import { createClient } from '../api/client.js';
import { apiKeyAuth, bearerAuth, type ClientAuth } from '../api/auth.js';
import { AuthenticationError, EbsError, PermissionError } from '../api/errors.js';
import { authorizationRequest, exchangeCode, validateCallback } from '../api/oauth.js';
import { connectClient } from '../worker/temporal-client.js';
import {
  connectionWorkflowId,
  type ConnectionInput,
  type ConnectionProfile,
  type ConnectionStatus,
  type Credentials,
} from '../workflows/connection-types.js';
import { runAction, UserError } from './errors.js';
import { portFlag } from './options.js';

const ID_RULE = /^[a-z0-9][a-z0-9_-]{0,62}$/;

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
    ...(config.service.caFile ? { ca: readFileSync(config.service.caFile) } : {}),
    ...(config.service.allowHttp ? { allowInsecureLoopback: true } : {}),
    ...(config.service.routeOverrides ? { routeOverrides: config.service.routeOverrides } : {}),
  };
}

/**
 * One cheap call that proves the credential works, and the business's name when the service
 * shows it (the spec has no business endpoint: a lead's or event's brand_name stands in).
 */
async function probe(config: Config, auth: ClientAuth): Promise<{ businessName?: string }> {
  const api = createClient({ ...serviceOptions(config), auth });
  try {
    const page = await api.leads.list({ per: 1 });
    const brand = page.data[0]?.attributes.brand_name;
    return brand ? { businessName: brand } : {};
  } catch (error) {
    if (error instanceof PermissionError) return {};
    if (error instanceof AuthenticationError)
      throw new UserError(`the service refused the credential: ${error.message}`);
    if (error instanceof EbsError)
      throw new UserError(`could not reach the service: ${error.message}`);
    throw error;
  }
}

/** Starts the connection workflow, or hands the new credentials to the one already running. */
export async function saveConnection(
  client: Client,
  taskQueue: string,
  profile: ConnectionProfile,
  credentials: Credentials,
): Promise<ConnectionStatus> {
  const workflowId = connectionWorkflowId(profile.connectionId);
  const input: ConnectionInput = { profile, credentials };
  try {
    await client.workflow.start('connectionWorkflow', { taskQueue, workflowId, args: [input] });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    return client.workflow
      .getHandle(workflowId)
      .executeUpdate<ConnectionStatus, [unknown]>('reconnect', {
        args: [
          {
            credentials,
            permissions: profile.permissions,
            ...(profile.businessName ? { businessName: profile.businessName } : {}),
          },
        ],
      });
  }
  return client.workflow.getHandle(workflowId).query<ConnectionStatus>('status');
}

/** Waits for the browser's redirect to http://127.0.0.1:<port>/callback. */
function listenForCallback(
  port: number,
): Promise<{ server: Server; port: number; callback: Promise<URL> }> {
  return new Promise((resolve, reject) => {
    let deliver: (url: URL) => void = () => undefined;
    const callback = new Promise<URL>((r) => (deliver = r));
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname !== '/callback') {
        res.writeHead(404).end();
        return;
      }
      const ok = url.searchParams.has('code');
      res.writeHead(ok ? 200 : 400, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        ok
          ? '<h1>ebsync is connected</h1><p>You can close this tab and return to the terminal.</p>'
          : '<h1>The connection was not made</h1><p>Return to the terminal for details.</p>',
      );
      deliver(url);
    });
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new UserError(
              `port ${port} on 127.0.0.1 is already in use; choose another with --redirect-port`,
            )
          : error,
      ),
    );
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      resolve({
        server,
        port: typeof address === 'object' && address ? address.port : port,
        callback,
      });
    });
  });
}

interface ConnectFlags {
  name: string;
  apiKey?: string | boolean;
  clientId?: string;
  redirectPort: number;
  timeout: number;
}

async function connectApp(
  config: Config,
  client: Client,
  flags: ConnectFlags,
): Promise<ConnectionStatus> {
  const authUrl = config.service.authUrl;
  const clientId = flags.clientId ?? config.service.clientId;
  if (!authUrl)
    throw new UserError(
      'EBS_AUTH_URL is not set: it names the authorization server of installed apps',
      2,
    );
  if (!clientId)
    throw new UserError('no OAuth client id: pass --client-id or set EBS_CLIENT_ID', 2);
  const ca = config.service.caFile ? readFileSync(config.service.caFile) : undefined;
  const { server, port, callback } = await listenForCallback(flags.redirectPort);
  try {
    const redirectUri = `http://127.0.0.1:${port}/callback`;
    const request = await authorizationRequest({ authUrl, clientId, redirectUri });
    process.stdout.write(
      `Open this address in a browser to approve ebsync:\n  ${request.url.toString()}\n`,
    );
    process.stdout.write(`Waiting for the approval on ${redirectUri} …\n`);
    const url = await Promise.race([
      callback,
      new Promise<never>((_, reject) =>
        setTimeout(
          () =>
            reject(
              new UserError(
                `no approval arrived within ${flags.timeout}s; run ebsync connect again`,
              ),
            ),
          flags.timeout * 1000,
        ).unref(),
      ),
    ]);
    const { code } = validateCallback({
      authUrl,
      clientId,
      callback: url,
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
    const { businessName } = await probe(
      config,
      bearerAuth(() => Promise.resolve(tokens.accessToken)),
    );
    const now = Date.now();
    return saveConnection(
      client,
      config.temporal.taskQueue,
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
  } finally {
    server.close();
  }
}

async function connectKey(
  config: Config,
  client: Client,
  flags: ConnectFlags,
): Promise<ConnectionStatus> {
  const apiKey = typeof flags.apiKey === 'string' ? flags.apiKey : config.service.apiKey;
  if (!apiKey) throw new UserError('no integration key: pass --api-key ik_… or set EBS_API_KEY', 2);
  if (!/^ik_\S+$/.test(apiKey))
    throw new UserError(
      '--api-key is not allowed: expected an integration key starting with ik_',
      2,
    );
  const { businessName } = await probe(config, apiKeyAuth(apiKey));
  return saveConnection(
    client,
    config.temporal.taskQueue,
    {
      connectionId: flags.name,
      kind: 'integration_key',
      baseUrl: serviceOptions(config).baseUrl,
      permissions: [],
      ...(businessName ? { businessName } : {}),
    },
    { kind: 'apiKey', apiKey },
  );
}

/** Connections of this deployment: the running connection workflows on its task queue. */
export async function listConnections(
  client: Client,
  taskQueue: string,
): Promise<ConnectionStatus[]> {
  const out: ConnectionStatus[] = [];
  const queue = taskQueue.replace(/'/g, "\\'");
  for await (const execution of client.workflow.list({
    query: `WorkflowType = 'connectionWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = '${queue}'`,
  })) {
    try {
      out.push(
        await client.workflow.getHandle(execution.workflowId).query<ConnectionStatus>('status'),
      );
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }
  return out.sort((a, b) => a.connectionId.localeCompare(b.connectionId));
}

function describe(status: ConnectionStatus): string {
  const who = status.businessName ? `${status.businessName}` : '(business name not shown)';
  const expiry = status.accessExpiresAt
    ? `, token until ${new Date(status.accessExpiresAt).toISOString()}`
    : '';
  const error = status.lastError ? `, last error: ${status.lastError}` : '';
  return `${status.connectionId}  ${status.state}  ${status.kind}  ${who}${expiry}${error}`;
}

function inspect(status: ConnectionStatus): string {
  const rows: [string, string][] = [
    ['connection', status.connectionId],
    ['state', status.state],
    ['kind', status.kind],
    ['business', status.businessName ?? '(not shown by the service)'],
    ['base URL', status.baseUrl],
    ['permissions', status.permissions.join(' ') || '(not reported)'],
    ['connected at', new Date(status.connectedAt).toISOString()],
    ['refreshes', String(status.refreshCount)],
  ];
  if (status.accessExpiresAt)
    rows.push(['token until', new Date(status.accessExpiresAt).toISOString()]);
  rows.push(['last error', status.lastError ?? '(none)']);
  return rows.map(([k, v]) => `${k.padEnd(13)}${v}`).join('\n') + '\n';
}

async function withTemporal<T>(fn: (client: Client, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const { client, close } = await connectClient(config);
  try {
    return await fn(client, config);
  } finally {
    await close();
  }
}

function checkName(name: string): string {
  if (!ID_RULE.test(name)) {
    throw new UserError(
      `--name='${name}' is not allowed: expected 1-63 lowercase letters, digits, '-' or '_'`,
      2,
    );
  }
  return name;
}

export function registerConnectionCommands(program: Command): void {
  program
    .command('connect')
    .description(
      'Connect a business: an installed app through the browser (OAuth with PKCE), or an integration key with --api-key.\n' +
        'Starts the connection workflow that owns the credentials; a worker must be running.',
    )
    .option('--name <id>', 'connection id', 'default')
    .option('--api-key [key]', 'connect with an integration key (default: EBS_API_KEY)')
    .option('--client-id <id>', 'OAuth client id of the installed app (default: EBS_CLIENT_ID)')
    .addOption(
      new Option('--redirect-port <port>', 'local port of the OAuth redirect (0 = any free port)')
        .default(8976)
        .argParser(portFlag()),
    )
    .addOption(
      new Option('--timeout <seconds>', 'how long to wait for the approval')
        .default(300)
        .argParser(Number),
    )
    .action((flags: ConnectFlags) =>
      runAction(() =>
        withTemporal(async (client, config) => {
          checkName(flags.name);
          const status =
            flags.apiKey !== undefined
              ? await connectKey(config, client, flags)
              : await connectApp(config, client, flags);
          process.stdout.write(
            `connected: ${status.businessName ?? 'the business'} (connection ${status.connectionId}, ${status.kind}, ${status.permissions.length} permissions)\n`,
          );
        }),
      ),
    );

  program
    .command('connections')
    .description('List connections and their state (active, needs_reauth, paused), or inspect one.')
    .argument('[id]', 'a connection to show in full')
    .option('--json', 'print JSON')
    .action((id: string | undefined, flags: { json?: boolean }) =>
      runAction(() =>
        withTemporal(async (client, config) => {
          if (id !== undefined) {
            checkName(id);
            let one: ConnectionStatus;
            try {
              one = await client.workflow
                .getHandle(connectionWorkflowId(id))
                .query<ConnectionStatus>('status');
            } catch (error) {
              if (error instanceof WorkflowNotFoundError)
                throw new UserError(`no connection named '${id}'`);
              throw error;
            }
            process.stdout.write(flags.json ? `${JSON.stringify(one, null, 2)}\n` : inspect(one));
            return;
          }
          const all = await listConnections(client, config.temporal.taskQueue);
          if (flags.json) process.stdout.write(`${JSON.stringify(all, null, 2)}\n`);
          else if (all.length === 0)
            process.stdout.write('no connections; add one with ebsync connect\n');
          else process.stdout.write(`${all.map(describe).join('\n')}\n`);
        }),
      ),
    );

  program
    .command('disconnect')
    .description("Revoke a connection's credentials at the service and stop its workflow.")
    .argument('<id>', 'connection id')
    .action((id: string) =>
      runAction(() =>
        withTemporal(async (client) => {
          checkName(id);
          try {
            const status = await client.workflow
              .getHandle(connectionWorkflowId(id))
              .executeUpdate<ConnectionStatus, []>('disconnect');
            process.stdout.write(
              `disconnected: ${id}${status.lastError ? ` (${status.lastError})` : ''}\n`,
            );
          } catch (error) {
            if (error instanceof WorkflowNotFoundError)
              throw new UserError(`no connection named '${id}'`);
            throw error;
          }
        }),
      ),
    );
}
