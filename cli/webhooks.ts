import { errorFromResponse } from '../api/errors.js';
import { refuseOtherWriter } from './destination-writer.js';
import got from 'got';
import { REDIRECT_POLICY } from '../config/redirect-policy.js';
import { z } from 'zod';
import { type Config } from '../config/index.js';
import { readPemFile } from '../worker/pem-files.js';
import { loadStartupConfig } from './startup-config.js';
import { signingSecretProblem } from '../webhooks/signature.js';
import { receiverOrigin, recordedReceiver } from '../worker/receiver-address.js';
import { startWebhookReceiver, webhookRegistrations } from '../worker/webhook-receiver.js';
import { runAction, UserError } from './errors.js';
import { readStdin, secretFrom } from './secret-input.js';
import {
  checkDestination,
  defaultDestination,
  normalizeDestination,
  requireConnection,
  requireConnectionName,
} from './sync.js';
import { connectClient } from '../worker/temporal-client.js';
import { loggerFor } from './worker.js';
import { unreachableReason } from '../api/network-failures.js';
import { listenRefusal } from './network-refusals.js';
import { stopSignal } from './stop-signals.js';
import { runUntilStopped } from './stopped-exit.js';

const sandboxEndpoint = z.object({
  id: z.union([z.number(), z.string()]).transform(String),
  secret: z.string().min(1),
});

/** Serves until SIGINT/SIGTERM, then closes the listener (deliveries in flight finish). */
async function serve(config: Config, flags: { host?: string; port?: number }): Promise<void> {
  const logger = loggerFor(config);
  let receiver;
  try {
    receiver = await startWebhookReceiver(config, logger, flags);
  } catch (error) {
    throw (
      listenRefusal(error, {
        host: flags.host ?? config.webhooks.host,
        port: flags.port ?? config.webhooks.port,
        hostFrom: flags.host === undefined ? 'EBSYNC_WEBHOOK_HOST' : '--host',
        portFrom: flags.port === undefined ? 'EBSYNC_WEBHOOK_PORT' : '--port',
      }) ?? error
    );
  }
  const stopped = stopSignal();
  logger.info(
    { url: `${receiver.url}/webhooks/{connection}`, taskQueue: config.temporal.taskQueue },
    'webhook receiver listening',
  );
  await stopped;
  await receiver.close();
  logger.info('webhook receiver stopped');
}

/** A flag's http(s) URL, or its one line of bad input naming the URL of `what` it expects. */
function httpUrlFlag(flag: string, value: string, what: string, example: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url?.protocol === 'https:' || url?.protocol === 'http:') return url;
  const unparsed = /^https?:\/\//i.test(value) ? ' (it does not parse)' : '';
  throw new UserError(
    `${flag}='${value}' is not allowed${unparsed}: expected an http:// or https:// URL of ${what}, e.g. ${example}`,
    2,
  );
}

/**
 * The sandbox's admin API from --sandbox-admin: the address `ebsync sandbox` prints (…/admin),
 * or the sandbox's own address, whose admin API is always at /admin (a user giving the
 * address they started it on got "No route for POST /webhooks").
 */
function sandboxAdminBase(value: string): string {
  const url = httpUrlFlag(
    '--sandbox-admin',
    value,
    "the sandbox's admin API",
    'https://127.0.0.1:4010/admin',
  );
  if (url.pathname === '/' && url.search === '' && url.hash === '') return `${url.origin}/admin`;
  return value.replace(/\/+$/, '');
}

function receiverUrl(base: string, connection: string): string {
  const example = 'https://hooks.example.com';
  if (/^https?:\/\/[^/?#]*@/i.test(base)) {
    // Not echoed: it holds a password, or may.
    throw new UserError(
      `--url is not allowed: it holds a user name or password (not shown here), which the service would not send; expected the receiver's URL without one, e.g. ${example}`,
      2,
    );
  }
  const url = httpUrlFlag('--url', base, 'the receiver', example);
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(base)) {
    throw new UserError(
      `--url is not allowed: it has a query or fragment (not shown here: it may carry a token), which deliveries would not keep (they go to <url>/webhooks/${connection}); expected the receiver's URL without one, e.g. ${example}`,
      2,
    );
  }
  const path = url.pathname.replace(/\/+$/, '');
  const own = `/webhooks/${connection}`;
  // The delivery URL given whole (what the receiver's log and the refusals print) is taken as it
  // is: appended to again, deliveries went to …/webhooks/shop/webhooks/shop, silently.
  if (path.endsWith(own)) return `${url.origin}${path}`;
  const other = /\/webhooks\/([^/]+)$/.exec(path)?.[1];
  if (other !== undefined) {
    throw new UserError(
      `--url is not allowed: it ends in /webhooks/${other}, another connection's delivery path; expected the receiver's URL, to which /webhooks/${connection} is added (or that whole delivery URL), e.g. ${example}`,
      2,
    );
  }
  return `${url.origin}${path}${own}`;
}

/**
 * One request to the sandbox's admin API: its own certificate authority as for the service
 * (EBS_CA_FILE), the admin token sent to the sandbox's origin only, no retries; an unreachable
 * sandbox is `unreachable`'s UserError.
 */
function sandboxAdminRequest(
  config: Config,
  admin: string,
  token: string,
  unreachable: (reason: string) => string,
) {
  const ca = config.service.caFile
    ? readPemFile('EBS_CA_FILE', config.service.caFile, 'CERTIFICATE').toString('utf8')
    : undefined;
  const base = admin.replace(/\/+$/, '');
  return async (method: 'GET' | 'POST' | 'DELETE', path: string, json?: unknown) => {
    const response = await got(`${base}${path}`, {
      method,
      headers: { 'x-admin-token': token },
      ...(ca ? { https: { certificateAuthority: ca } } : {}),
      ...(json === undefined ? {} : { json }),
      throwHttpErrors: false,
      ...REDIRECT_POLICY,
      retry: { limit: 0 },
      timeout: { request: 15_000 },
    }).catch((error: unknown) => {
      throw new UserError(unreachable(unreachableReason(error)));
    });
    // The body as JSON, or undefined when it is not: each caller checks it with its schema.
    let body: unknown;
    try {
      body = JSON.parse(response.body);
    } catch {
      body = undefined;
    }
    return { statusCode: response.statusCode, headers: response.headers, body };
  };
}

/** Registers the receiver's URL at the sandbox's admin API; the sandbox makes the secret. */
async function registerAtSandbox(
  config: Config,
  admin: string,
  token: string,
  url: string,
): Promise<{ id: string; secret: string }> {
  const request = sandboxAdminRequest(
    config,
    admin,
    token,
    (reason) =>
      `cannot reach the sandbox's admin API at --sandbox-admin ${admin}: ${reason}; nothing was registered`,
  );
  const response = await request('POST', '/webhooks', { url });
  if (response.statusCode !== 201) {
    // The service's error shape, said in its words: never the raw body.
    const refused = errorFromResponse(
      response.statusCode,
      response.body,
      response.headers,
      'the sandbox refused the registration',
    );
    const hint =
      response.statusCode === 401 || response.statusCode === 403
        ? ': check --admin-token (or EBS_SANDBOX_ADMIN_TOKEN), the token the sandbox printed as it started'
        : response.statusCode === 404
          ? `: no sandbox admin API at ${admin}; give --sandbox-admin the admin address \`ebsync sandbox\` printed as it started (its 'admin' line)`
          : '';
    throw new UserError(`${refused.message}${hint}; nothing was registered`);
  }
  const parsed = sandboxEndpoint.safeParse(response.body);
  if (!parsed.success)
    throw new UserError('the sandbox answered without an endpoint id and secret');
  return parsed.data;
}

export interface RegisterFlags {
  url?: string;
  to?: string;
  sandboxAdmin?: string;
  adminToken?: string;
  secretStdin?: boolean;
  /** False with --no-check-destination: the database is not opened from here first. */
  checkDestination?: boolean;
}

/**
 * Before anything is registered (at the sandbox or here): deliveries for a connection that
 * does not exist, or into a destination that cannot be opened, could never be applied.
 */
async function checkBeforeRegister(
  config: Config,
  connection: string,
  destination: string,
  flags: RegisterFlags,
): Promise<void> {
  if (flags.checkDestination !== false) {
    await checkDestination(destination, 'nothing was registered');
    await refuseOtherWriter(config, connection, destination, 'nothing was registered');
  }
  const { client, close } = await connectClient(config);
  try {
    await requireConnection(client, connection);
  } finally {
    await close();
  }
}

/**
 * Where deliveries reach the receiver from this machine, when --url is not given: a receiver
 * of this data dir that runs here (started with --port or on port 0 too), else the configured
 * address; undefined when that is port 0, which nothing can be sent to. A receiver listening
 * on every interface (0.0.0.0, ::) is reached at loopback: a wildcard is where one listens,
 * not an address to send to.
 */
export function localReceiverUrl(config: Config): string | undefined {
  const at = recordedReceiver(config) ?? config.webhooks;
  return at.port === 0 ? undefined : receiverOrigin(at, true);
}

async function register(config: Config, connection: string, flags: RegisterFlags): Promise<void> {
  requireConnectionName(connection);
  const destination = normalizeDestination(flags.to ?? defaultDestination(config));
  const base = flags.url ?? localReceiverUrl(config);
  if (base === undefined) {
    throw new UserError(
      "EBSYNC_WEBHOOK_PORT is 0, so the receiver's port is picked when it starts and deliveries to :0 would reach nothing, and no receiver of this data dir runs here to say which it got: give --url with the address it printed ('webhook receiver listening')",
      2,
    );
  }
  const url = receiverUrl(base, connection);
  let endpoint: { id: string | null; secret: string };
  let adminToken: string | undefined;
  // Bad input, said before the token is read, Temporal asked or anything sent.
  const sandboxAdmin =
    flags.sandboxAdmin === undefined ? undefined : sandboxAdminBase(flags.sandboxAdmin);
  if (sandboxAdmin !== undefined) {
    if (flags.secretStdin) {
      throw new UserError('--sandbox-admin and --secret-stdin do not go together', 2);
    }
    adminToken = await secretFrom(flags.adminToken, config.sandbox.adminToken, {
      flag: '--admin-token',
      env: 'EBS_SANDBOX_ADMIN_TOKEN',
      what: "sandbox's admin token",
    });
    if (!adminToken) {
      throw new UserError(
        "--sandbox-admin needs the sandbox's admin token: set EBS_SANDBOX_ADMIN_TOKEN, or pass --admin-token - with it on standard input",
        2,
      );
    }
    await checkBeforeRegister(config, connection, destination, flags);
    endpoint = await registerAtSandbox(config, sandboxAdmin, adminToken, url);
    const problem = signingSecretProblem(config.webhooks.signature, endpoint.secret);
    if (problem) throw new UserError(`the sandbox's signing secret is not allowed: ${problem}`);
  } else if (flags.secretStdin) {
    const secret = await readStdin();
    const problem = signingSecretProblem(config.webhooks.signature, secret);
    if (problem) throw new UserError(`the signing secret on stdin is not allowed: ${problem}`, 2);
    await checkBeforeRegister(config, connection, destination, flags);
    endpoint = { id: null, secret };
  } else {
    throw new UserError(
      'say where the signing secret comes from: --sandbox-admin URL (the sandbox makes one) or --secret-stdin (a secret the service gave you)',
      2,
    );
  }
  const registrations = webhookRegistrations(config);
  // Registered again: the sandbox endpoints of earlier registrations sign with the secret just
  // replaced, so every delivery they send would be refused: those changes would be lost.
  let replaced: { id: string; url: string }[] = [];
  /** Those this registration leaves signing: said now (the earlier ones were said before). */
  let newlyLeft: { id: string; url: string }[] = [];
  try {
    const earlier = await registrations.get(connection);
    newlyLeft = earlier?.endpointId ? [{ id: earlier.endpointId, url: earlier.url }] : [];
    replaced = [...(earlier?.leftEndpoints ?? []), ...newlyLeft].filter(
      (e) => e.id !== endpoint.id,
    );
    await registrations.put(connection, {
      secret: endpoint.secret,
      destination,
      url,
      endpointId: endpoint.id,
      registeredAt: new Date().toISOString(),
      // Kept until they are removed (below, with the sandbox's admin API), for the next time.
      ...(replaced.length > 0 ? { leftEndpoints: replaced } : {}),
    });
  } finally {
    registrations.close();
  }
  process.stdout.write(
    `registered: deliveries to ${url} update ${destination.startsWith('postgres') ? 'the Postgres destination' : destination}` +
      `${endpoint.id === null ? '' : ` (sandbox endpoint ${endpoint.id})`}; the signing secret is stored sealed\n`,
  );
  if (replaced.length === 0) return;
  if (sandboxAdmin === undefined) {
    // Said once, by the registration that left them: one removed by hand since is not said
    // again by every later one (a --sandbox-admin registration checks and forgets them).
    if (newlyLeft.length === 0) return;
    const ids = newlyLeft.map((e) => e.id).join(', ');
    throw new UserError(
      `the sandbox endpoint ${ids} that the earlier registration of '${connection}' made still signs with the replaced secret, so the receiver refuses its deliveries: remove it at the sandbox (DELETE <its admin API>/webhooks/${ids}), or register with --sandbox-admin, which removes it`,
    );
  }
  // They go; one that cannot is said, exit 1, and stays in the registration for the next time.
  for (const earlier of replaced) {
    const removed = await removeAtSandbox(config, sandboxAdmin, adminToken ?? '', earlier);
    process.stdout.write(
      removed
        ? `removed the earlier sandbox endpoint ${earlier.id}, whose secret this replaces\n`
        : `the earlier sandbox endpoint ${earlier.id} is not at this sandbox with that URL (removed already, or another sandbox's): forgotten\n`,
    );
  }
  const settled = webhookRegistrations(config);
  try {
    const now = await settled.get(connection);
    if (now) await settled.put(connection, { ...now, leftEndpoints: [] });
  } finally {
    settled.close();
  }
}

/**
 * Removes the endpoint an earlier registration made at the sandbox's admin API, if it is still
 * there with that registration's URL (a sandbox started afresh may have given its id to
 * another): true when removed. A refusal or no answer is a UserError.
 */
async function removeAtSandbox(
  config: Config,
  admin: string,
  token: string,
  earlier: { id: string; url: string },
): Promise<boolean> {
  const base = admin.replace(/\/+$/, '');
  const left = `the earlier sandbox endpoint ${earlier.id} may still be there, signing with the replaced secret (its deliveries would be refused): remove it with DELETE ${base}/webhooks/${earlier.id}`;
  const call = sandboxAdminRequest(config, admin, token, (reason) => `${left} (${reason})`);
  const listed = await call('GET', '/webhooks');
  const endpoints = sandboxEndpoints.safeParse(listed.body);
  if (listed.statusCode !== 200 || !endpoints.success) {
    throw new UserError(`${left} (its list of endpoints: HTTP ${listed.statusCode})`);
  }
  const same = endpoints.data.data.some(
    (e) => String(e.id) === earlier.id && e.url === earlier.url,
  );
  if (!same) return false;
  const deleted = await call('DELETE', `/webhooks/${encodeURIComponent(earlier.id)}`);
  // Gone meanwhile is what was wanted.
  if (deleted.statusCode >= 300 && deleted.statusCode !== 404) {
    throw new UserError(`${left} (HTTP ${deleted.statusCode})`);
  }
  return deleted.statusCode < 300;
}

/** The sandbox's `GET /admin/webhooks`, as much of it as the removal needs. */
const sandboxEndpoints = z.object({
  data: z.array(z.object({ id: z.union([z.number(), z.string()]), url: z.string() })),
});

/** `ebsync webhooks serve`. */
export async function webhooksServeCommand(flags: { host?: string; port?: number }): Promise<void> {
  await runUntilStopped(async () => {
    await serve(loadStartupConfig(), flags);
  });
}

/** `ebsync webhooks register <connection>`. */
export function webhooksRegisterCommand(connection: string, flags: RegisterFlags): Promise<void> {
  return runAction(async () => {
    await register(loadStartupConfig(), connection, flags);
  });
}
