import { join } from 'node:path';
import { loadStartupConfig } from './startup-config.js';
import { startDevServer, canConnect, type DevServer } from '../worker/dev-server.js';
import { stopLeftServer } from '../worker/dev-server-guard.js';
import { makeDataDir } from '../store/private-files.js';
import { loggerFor, runWorker } from './worker.js';
import { startWebhookReceiver, type RunningReceiver } from '../worker/webhook-receiver.js';
import {
  demoBanner,
  runMainJob,
  startDemoService,
  startDevStatusPage,
  type DemoService,
} from './dev-stack.js';
import { reportFailure, UserError } from './errors.js';
import { lockDataDir } from './dev-lock.js';
import { requireOwnKeys } from './server-keys.js';
import { connectClient, TemporalUnreachableError } from '../worker/temporal-client.js';
import { temporalUsesTls } from '../worker/temporal-connection.js';
import { listenRefusal } from './network-refusals.js';
import type { Config } from '../config/index.js';
import {
  addressHost,
  bareHost,
  DEFAULT_TEMPORAL_ADDRESS,
  devUiPort,
} from '../config/dev-server-ports.js';
import { isLoopbackHost } from '../config/loopback.js';
import { stopSignal } from './stop-signals.js';
import { runUntilStopped } from './stopped-exit.js';

export interface ServerFlags {
  ip: string;
  port: number;
  uiPort?: number;
  dbFilename?: string;
  namespace: string;
}

/** `ebsync dev`'s flags: whether --port, --ip and --namespace were given on the command line. */
export interface DevFlags extends ServerFlags {
  portGiven?: boolean;
  ipGiven?: boolean;
  namespaceGiven?: boolean;
}

/**
 * The namespace `ebsync dev` uses: --namespace, given, is the one its server makes and its
 * worker, main job and status page use (it made the namespace, and everything ran in
 * `default`); TEMPORAL_NAMESPACE set to another as well is refused (exit 2). Without the flag,
 * TEMPORAL_NAMESPACE (default `default`) decides, and is the namespace its server makes.
 */
export function devNamespace(
  flags: DevFlags,
  envNamespace: string | undefined,
): string | undefined {
  if (!flags.namespaceGiven) return undefined;
  const env = envNamespace?.trim();
  if (env && env !== flags.namespace) {
    throw new UserError(
      `--namespace ${flags.namespace} disagrees with TEMPORAL_NAMESPACE=${env}: give one of them, or the same name in both`,
      2,
    );
  }
  return flags.namespace;
}

const sameHost = (a: string, b: string): boolean => {
  const loopback = (h: string): string => {
    const bare = bareHost(h);
    return bare === 'localhost' || bare === '::1' ? '127.0.0.1' : bare;
  };
  return loopback(a) === loopback(b);
};

/**
 * The Temporal address `ebsync dev` uses: an explicit --port or --ip decides it (where its
 * server runs, and what its worker and clients connect to), so `npm start -- --port 7707`
 * never lands on another server at TEMPORAL_ADDRESS's default, 7233. TEMPORAL_ADDRESS set
 * to another address as well is refused (exit 2): which one was meant is not ours to guess.
 * Without either flag, TEMPORAL_ADDRESS (default localhost:7233) decides, as before.
 */
export function devAddress(flags: DevFlags, envAddress: string | undefined): string | undefined {
  if (!flags.portGiven && !flags.ipGiven) return undefined;
  const wildcard = flags.ip === '0.0.0.0' || flags.ip === '::';
  const connectHost = wildcard ? '127.0.0.1' : addressHost(flags.ip);
  const env = envAddress?.trim();
  if (!env) return `${connectHost}:${flags.port}`;
  const colon = env.lastIndexOf(':');
  const [envHost, envPort] =
    colon < 0 ? [env, NaN] : [env.slice(0, colon), Number(env.slice(colon + 1))];
  const portAgrees = !flags.portGiven || envPort === flags.port;
  const hostAgrees = !flags.ipGiven || wildcard || sameHost(envHost, flags.ip);
  if (!portAgrees || !hostAgrees) {
    const given = [
      flags.ipGiven ? `--ip ${flags.ip}` : '',
      flags.portGiven ? `--port ${flags.port}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    throw new UserError(
      `${given} disagrees with TEMPORAL_ADDRESS=${env}: give one of them, or the same address in both`,
      2,
    );
  }
  return env;
}
/** Where `ebsync dev` records the dev server it started (worker/dev-server-guard.ts). */
const serverRecordFile = (dataDir: string): string => join(dataDir, 'temporal-server.json');

async function startFromFlags(
  flags: ServerFlags,
  dataDir: string,
  ownProcessGroup = false,
): Promise<DevServer> {
  const port = flags.port;
  // Seen on the CLI v1.5.1 dev server: on an IPv6 address alone its own services, which reach
  // one another over 127.0.0.1, are refused, and it answers nothing but errors.
  if (flags.ip.includes(':') && flags.ip !== '::') {
    throw new UserError(
      `--ip ${flags.ip}: the Temporal dev server does not run on an IPv6 address alone; use --ip 127.0.0.1, or --ip :: for every address (IPv6 clients then reach it at [::1]:${port})`,
      2,
    );
  }
  const uiPort = flags.uiPort ?? devUiPort(port);
  if (uiPort === undefined) {
    throw new UserError(
      `--port ${port} leaves no room for the web UI at port + 1000 (at most 65535); give --ui-port`,
      2,
    );
  }
  // One port cannot serve both: the server started and then died on its own raw log line.
  if (uiPort === port) throw new UserError('--ui-port must differ from --port', 2);
  const dbFilename = flags.dbFilename ?? join(dataDir, 'temporal.db');
  // The data dir's file: a folder that cannot be made is said as the setting it comes from.
  if (flags.dbFilename === undefined) makeDataDir(dataDir);
  try {
    return await startDevServer({
      ip: flags.ip,
      port,
      uiPort,
      dbFilename,
      namespace: flags.namespace,
      onProgress: (line) => process.stderr.write(`${line}\n`),
      ownProcessGroup,
      ...(ownProcessGroup ? { recordFile: serverRecordFile(dataDir) } : {}),
    });
  } catch (error) {
    // The probe of a port that could not be had (an --ip not of this machine, a name that
    // does not resolve): said with the flag it came from, not as `listen EADDRNOTAVAIL …`.
    const failedPort = (error as { port?: unknown }).port;
    const refusal = listenRefusal(error, {
      host: flags.ip,
      port: typeof failedPort === 'number' ? failedPort : port,
      hostFrom: '--ip',
      portFrom: failedPort === uiPort && uiPort !== port ? '--ui-port' : '--port',
    });
    // The dev server's own lines (a failed `go install` ends with the tail of its output) stay
    // lines: they come from this machine's tools, not from a service.
    throw refusal ?? new UserError((error as Error).message.split('\n'));
  }
}

/**
 * Until Ctrl-C or SIGTERM, which stop the server, or until it ends by itself: then the workers
 * and commands pointed at it have lost it, so it is said in one line (exit 1), not ended in
 * silence with exit 0 as if it had been stopped on purpose.
 */
async function untilSignal(server: DevServer): Promise<void> {
  const signalled = stopSignal().then(() => true);
  if (await Promise.race([signalled, server.exited.then(() => false)])) {
    await server.stop();
    return;
  }
  const code = await server.exited;
  throw new UserError(
    `the Temporal dev server stopped on its own (${code === null ? 'killed' : `exit code ${code}`}); ` +
      `its data is kept in ${server.dbFilename}: start it again with 'ebsync temporal'`,
  );
}

/** `host:port` (a Temporal address) in its two parts; an IPv6 host without its brackets. */
function hostAndPort(address: string): { host: string; port: string } {
  const at = address.lastIndexOf(':');
  return { host: bareHost(address.slice(0, at)), port: address.slice(at + 1) };
}

/**
 * Other commands find the UI at the address's port + 1000 (TEMPORAL_UI_URL unset): a UI
 * elsewhere needs the setting, or the links of `ebsync status` run in another shell lead
 * nowhere. The line that says so; null when nothing needs setting.
 */
function uiUrlHint(server: DevServer, config: Config): string | null {
  const uiPort = Number(new URL(server.uiUrl).port);
  const serverPort = Number(hostAndPort(server.address).port);
  return uiPort !== serverPort + 1000 && config.temporal.uiUrl.replace(/\/+$/, '') !== server.uiUrl
    ? `links: the UI is not at --port + 1000, so set TEMPORAL_UI_URL=${server.uiUrl} for ebsync status and the status page`
    : null;
}

/**
 * `ebsync dev --port` put its server where commands run in another shell do not look unless
 * told (TEMPORAL_ADDRESS unset there): the line that says so; null at the default address.
 */
function addressHint(server: DevServer): string | null {
  const { host, port } = hostAndPort(server.address);
  return isLoopbackHost(host) && port === hostAndPort(DEFAULT_TEMPORAL_ADDRESS).port
    ? null
    : `other terminals: set TEMPORAL_ADDRESS=${server.address} for ebsync connect, sync and status (unset, they look at ${DEFAULT_TEMPORAL_ADDRESS})`;
}

/**
 * The port `dev` would start its server on answers, but no Temporal server answered the
 * connection there (another program holds the port): the line said to start a local server
 * with 'ebsync temporal' or set TEMPORAL_ADDRESS, which is what `dev` had just tried. Null
 * for other errors, and under TLS, where the TLS settings may be the cause (the line says so).
 */
function notTemporalThere(config: Config, error: unknown): UserError | null {
  if (!(error instanceof TemporalUnreachableError) || temporalUsesTls(config)) return null;
  const { port } = hostAndPort(config.temporal.address);
  return new UserError(
    `something listens at ${config.temporal.address}, but no Temporal server answered there ` +
      `(${error.reason}): stop what holds port ${port}, or start ebsync dev on ` +
      `another with --port`,
  );
}

/** `ebsync temporal`. */
export async function temporalCommand(flags: ServerFlags): Promise<void> {
  await runUntilStopped(async () => {
    const config = loadStartupConfig();
    const server = await startFromFlags(flags, config.dataDir);
    const hint = uiUrlHint(server, config);
    const uiHint = hint ? `  ${hint}\n` : '';
    // Listening for the stop signals before saying "ready": a SIGTERM sent as soon as the
    // line is read (a test, a script) found no handler, ended this process at once and left
    // the server running.
    const stopped = untilSignal(server);
    process.stdout.write(
      `Temporal dev server ready at ${server.address} (namespace ${flags.namespace})\n` +
        `  UI:   ${server.uiUrl}\n${uiHint}  data: ${server.dbFilename}\n  stop: Ctrl-C\n`,
    );
    await stopped;
  });
}

/**
 * The shutdown grace of `ebsync dev`'s worker when `dev` started the Temporal server itself.
 * Ctrl-C then stops the whole stack, that server too, so no worker is left to go on with the
 * pass, and one partition's activity (thousands of records) held the exit for the whole
 * configured grace (30 s by default). Activities are asked to cancel after this instead, and
 * report it to the server, which `dev` stops only once its worker has; what they wrote is
 * committed batch by batch with its checkpoint, so the next start retries them at once from
 * there. A token refresh in flight still completes (the force time is a minute past the
 * grace: worker/worker.ts).
 */
export const OWN_SERVER_SHUTDOWN_GRACE_MS = 1_000;

/** `ebsync dev`, what `npm start` runs. */
export async function devCommand(flags: DevFlags): Promise<void> {
  await runUntilStopped(async () => {
    const address = devAddress(flags, process.env.TEMPORAL_ADDRESS);
    // Everything in this process (worker, clients, the main job) reads it from here.
    if (address) process.env.TEMPORAL_ADDRESS = address;
    const namespace = devNamespace(flags, process.env.TEMPORAL_NAMESPACE);
    if (namespace) process.env.TEMPORAL_NAMESPACE = namespace;
    const config = loadStartupConfig();
    const unlock = lockDataDir(config.dataDir);
    try {
      await runDev(flags, config);
    } finally {
      unlock();
    }
  });
}

async function runDev(flags: DevFlags, startConfig: Config): Promise<void> {
  let config = startConfig;
  const logger = loggerFor(config);
  const { host, port: portText } = hostAndPort(config.temporal.address);
  // An explicit --ip (0.0.0.0 included) is where the server listens; the address is where
  // this process reaches it.
  const listenIp = flags.ipGiven ? flags.ip : host === 'localhost' ? '127.0.0.1' : host;
  // A server an earlier `ebsync dev` of this data dir started and did not stop (its process
  // and the watchdog were both killed): it holds the port and the SQLite file, and would be
  // taken below for someone else's. This start holds the data dir's lock, so it is stopped.
  const left = await stopLeftServer(serverRecordFile(config.dataDir));
  if (left !== undefined) {
    process.stdout.write(
      `Stopped the Temporal dev server (pid ${left}) that an earlier ebsync dev on this data dir left running\n`,
    );
  }
  let server: DevServer | undefined;
  if (await canConnect(host, Number(portText))) {
    logger.info({ address: config.temporal.address }, 'using the Temporal server already running');
    // Before a worker of this data directory joins the task queue of another's.
    const { client, close } = await connectClient(config).catch((error: unknown) => {
      throw notTemporalThere(config, error) ?? error;
    });
    try {
      await requireOwnKeys(client, config);
    } finally {
      await close();
    }
  } else {
    // Out of reach of the terminal's Ctrl-C, which used to stop it at once: the worker's
    // running activities could then neither finish nor say they stopped, and the worker
    // waited its grace out. It is stopped below, once the worker has stopped.
    server = await startFromFlags(
      { ...flags, ip: listenIp, port: Number(portText), namespace: config.temporal.namespace },
      config.dataDir,
      true,
    );
    // A closed terminal (SIGHUP) stops the stack as Ctrl-C does, server included; SIGHUP's
    // default would end this process alone.
    process.once('SIGHUP', () => process.kill(process.pid, 'SIGTERM'));
    logger.info(
      { address: server.address, ui: server.uiUrl, db: server.dbFilename },
      'Temporal dev server started',
    );
    const hints = [uiUrlHint(server, config), addressHint(server)].filter((h) => h !== null);
    process.stdout.write(`Temporal UI: ${server.uiUrl}\n${hints.map((h) => `  ${h}\n`).join('')}`);
    // Links on the status page go to this server's UI, wherever its port is.
    config = {
      ...config,
      temporal: { ...config.temporal, uiUrl: server.uiUrl },
      worker: {
        ...config.worker,
        shutdownGrace: Math.min(config.worker.shutdownGrace, OWN_SERVER_SHUTDOWN_GRACE_MS),
      },
    };
  }
  let demo: DemoService | undefined;
  let receiver: RunningReceiver | undefined;
  let page: { close(): Promise<void> } | undefined;
  try {
    if (!config.service.baseUrl) {
      demo = await startDemoService(config, logger);
      config = {
        ...config,
        service: {
          ...config.service,
          baseUrl: demo.baseUrl,
          ...(demo.caFile ? { caFile: demo.caFile } : {}),
        },
      };
      process.stdout.write(demoBanner(demo));
    }
    // Webhooks are part of the main job; the default port taken costs them, not the rest.
    // A port set on purpose (EBSYNC_WEBHOOK_PORT) that cannot be had is an error: deliveries
    // sent there would reach someone else, or nothing.
    receiver = await startWebhookReceiver(config, logger).catch((error: unknown) => {
      const refusal = listenRefusal(error, {
        host: config.webhooks.host,
        port: config.webhooks.port,
        hostFrom: 'EBSYNC_WEBHOOK_HOST',
        portFrom: 'EBSYNC_WEBHOOK_PORT',
      });
      if (refusal && process.env.EBSYNC_WEBHOOK_PORT?.trim()) throw refusal;
      // In words, as the refusal above: the port, that it is in use, the setting for another.
      if (refusal) {
        logger.warn(
          { port: config.webhooks.port },
          `webhook receiver not started: ${refusal.message}`,
        );
      } else {
        logger.warn({ error: (error as Error).message }, 'webhook receiver not started');
      }
      return undefined;
    });
    if (receiver) {
      logger.info({ url: `${receiver.url}/webhooks/{connection}` }, 'webhook receiver listening');
      // The status page asks the receiver at its port: the one it got, when 0 asked for any.
      const port = Number(new URL(receiver.url).port);
      config = { ...config, webhooks: { ...config.webhooks, port } };
    }
    // Heard from here on, so a Ctrl-C while the status page or the job's client starts up
    // still stops the job (the worker hears it on its own).
    const stopping = new AbortController();
    const stop = (): void => stopping.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      // A worker that fails ends the job too, which waits for it to poll before anything.
      const worker = runWorker(config, logger).catch((error: unknown) => {
        stop();
        throw error;
      });
      // Awaited below, after the status page starts: a worker failing first (its namespace
      // missing) was an unhandled rejection meanwhile, which crashed with a stack trace.
      void worker.catch(() => undefined);
      page = await startDevStatusPage(config, logger);
      // The worker runs until Ctrl-C; the main job's pass runs beside it and reports when done.
      const job = runMainJob(config, logger, demo, stopping.signal).catch((error: unknown) => {
        process.exitCode = reportFailure(error);
      });
      await worker;
      await job;
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
  } finally {
    await receiver?.close();
    await page?.close();
    await demo?.close();
    await server?.stop();
  }
}
