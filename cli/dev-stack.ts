import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import type { Logger } from '../worker/logger.js';
import { makePrivateDir } from '../store/private-files.js';
import { connectClient } from '../worker/temporal-client.js';
import { encryptionKeyRing } from '../worker/data-converter.js';
import { livePollers, workerIdentity } from '../worker/worker-identity.js';
import { connectionWorkflowId } from '../workflows/connection-types.js';
import { listConnections } from './connection-list.js';
import { saveConnection } from './connections.js';
import { ensureDefaultSchedules, scheduleLines } from './schedules.js';
import { resumeDemoSchedules, setDemoAside } from './demo-schedules.js';
import { otherWriters } from './destination-writer.js';
import { ListenRefusal } from './network-refusals.js';
import type { StatusServer } from './status-server.js';
import { summaryText } from './mirror-summary.js';
import { defaultDestination, displayPath, startOrAttach, watchMirror } from './sync.js';

/** The demo's connection id, so a second start finds the first one's connection. */
export const DEMO_CONNECTION = 'demo';
const DEMO_LEADS = 2_000;
const DEMO_EVENTS = 300;
const DEMO_PORT = 4010;
/** The query the summary suggests: it names columns the leads table has (docs/mirror.md). */
const TRY_QUERY =
  'SELECT origin, count(*) AS n FROM leads WHERE deleted_at IS NULL GROUP BY origin ORDER BY n DESC';

export interface DemoService {
  baseUrl: string;
  apiKey: string;
  caFile: string | undefined;
  close(): Promise<void>;
}

/**
 * The sandbox with generated demo data, kept under EBSYNC_DATA_DIR/sandbox so a second start
 * serves the same business with the same key (and the mirror has nothing new to write).
 */
export async function startDemoService(config: Config, logger: Logger): Promise<DemoService> {
  const { startSandbox } = await import('../sandbox/server.js');
  const dir = join(config.dataDir, 'sandbox');
  const certDir = join(dir, 'cert');
  makePrivateDir(certDir);
  const keyFile = join(dir, 'demo-api-key');
  if (!existsSync(keyFile)) {
    writeFileSync(keyFile, `ik_demo_${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  }
  const apiKey = readFileSync(keyFile, 'utf8').trim();
  const options = {
    db: join(dir, 'demo.db'),
    certDir,
    apiKey,
    seed: { leads: DEMO_LEADS, events: DEMO_EVENTS },
    // A 500 of the demo service is a bug: logged (redacted), or nothing would say it.
    onInternalError: (error: unknown, route: string) =>
      logger.error({ err: error, route }, 'the demo service answered 500'),
  };
  let sandbox;
  try {
    sandbox = await startSandbox({ ...options, port: DEMO_PORT });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    logger.warn({ port: DEMO_PORT }, 'demo port in use; the demo service takes a free port');
    sandbox = await startSandbox({ ...options, port: 0 });
  }
  return {
    baseUrl: sandbox.baseUrl,
    apiKey: sandbox.apiKey,
    caFile: sandbox.caFile,
    close: () => sandbox.close(),
  };
}

export function demoBanner(demo: DemoService): string {
  return [
    '',
    'No service is configured (EBS_BASE_URL), so ebsync runs against its SANDBOX with DEMO DATA:',
    `  ${DEMO_LEADS} generated leads and ${DEMO_EVENTS} events at ${demo.baseUrl}`,
    'To mirror your real business instead:',
    '  EBS_BASE_URL=https://<your service>/api/v1/ EBS_API_KEY=ik_… npm start',
    '',
  ].join('\n');
}

/** Connects the demo business once; a later start with the same data directory reuses it. */
async function ensureDemoConnection(
  client: Client,
  config: Config,
  demo: DemoService,
): Promise<string> {
  const existing = (await listConnections(client, config)).find(
    (c) => c.connectionId === DEMO_CONNECTION,
  );
  if (existing && existing.baseUrl === demo.baseUrl && existing.state === 'active') {
    return DEMO_CONNECTION;
  }
  if (existing) {
    // The demo service moved (another port): its old connection cannot reach it.
    await client.workflow
      .getHandle(connectionWorkflowId(DEMO_CONNECTION))
      .terminate('the demo service moved; reconnecting');
  }
  await saveConnection(
    client,
    config,
    {
      connectionId: DEMO_CONNECTION,
      kind: 'integration_key',
      baseUrl: demo.baseUrl,
      permissions: ['all (sandbox full-access key)'],
      businessName: 'Sandbox Photo Booths (demo data)',
    },
    { kind: 'apiKey', apiKey: demo.apiKey },
  );
  return DEMO_CONNECTION;
}

/**
 * The main job after the worker is up: make sure there is a connection (the demo one when no
 * service is configured), mirror it into the data directory with progress, then summarize.
 */
export async function runMainJob(
  config: Config,
  logger: Logger,
  demo: DemoService | undefined,
  stopped: AbortSignal,
): Promise<void> {
  // `stopped` is Ctrl-C (or SIGTERM), which ends the job wherever it is. Before the pass is
  // watched, its steps wait on workflows' answers (the demo connection saved, a pass started)
  // for up to 30 s each; the worker that would answer stops at once, so a Ctrl-C at start-up
  // waited them out. Its calls are cancelled instead, and the next start goes on from what
  // they did.
  if (stopped.aborted) return;
  const { client, close } = await connectClient(config);
  try {
    await client.withAbortSignal(stopped, () =>
      mainJobSteps(client, config, logger, demo, stopped),
    );
  } catch (error) {
    if (!stopped.aborted) throw error;
  } finally {
    await close();
  }
}

/** How long the main job waits for the worker beside it to poll before it asks anything. */
const OWN_WORKER_WAIT_MS = 60_000;

/**
 * Until the worker this process runs polls the task queue. The connections are listed by
 * asking their workflows, and not at all while no worker has polled the queue lately: on a
 * dev server just started (every `npm start` after the first) none had, so the job said to
 * start a worker and mirrored nothing. Past the wait, the listing says what it finds.
 */
async function untilOwnWorkerPolls(
  client: Client,
  config: Config,
  stopped: AbortSignal,
): Promise<void> {
  const ours = workerIdentity(encryptionKeyRing(config).keys);
  const { namespace, taskQueue } = config.temporal;
  for (const end = Date.now() + OWN_WORKER_WAIT_MS; Date.now() < end;) {
    // A queue that cannot be described (a key without the permission): the listing asks the
    // workflows anyway then, as it does.
    const pollers = await livePollers(client, namespace, taskQueue).catch(() => null);
    if (pollers === null || pollers.includes(ours)) return;
    await sleep(200, undefined, { signal: stopped });
  }
}

/** The demo's connection, seen by a start that has a service of its own (EBS_BASE_URL). */
function isDemoLeftover(c: { connectionId: string; baseUrl: string }, config: Config): boolean {
  return c.connectionId === DEMO_CONNECTION && c.baseUrl !== config.service.baseUrl;
}

/** What to run when the configured service has no connection yet: the exact commands. */
export function noConnectionText(config: Config, demoLeft: boolean): string {
  const lines = [
    `No connection to ${config.service.baseUrl ?? 'the service'} yet: run 'npx ebsync connect --api-key' ` +
      "(or 'npx ebsync connect' for an installed app) in another terminal, then 'npx ebsync sync --connection default'.",
  ];
  if (demoLeft) {
    const file = displayPath(defaultDestination(config).slice('sqlite:'.length));
    lines.push(
      `Connection ${DEMO_CONNECTION} is the demo's, and its sandbox runs only under 'npm start' without EBS_BASE_URL: ` +
        `it is not mirrored now. Its records fill ${file}, which one connection writes: sync yours ` +
        `with --to sqlite:ANOTHER.db, or run 'npx ebsync sync --forget --connection ${DEMO_CONNECTION}' first.`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Why the main job starts no pass into a file another connection writes: the commands to run. */
export function otherWriterText(
  connectionId: string,
  destination: string,
  others: readonly string[],
): string {
  const file = displayPath(destination.slice('sqlite:'.length));
  const them = others.length === 1 ? `connection ${others[0]}` : `connections ${others.join(', ')}`;
  const forget = others.map((w) => `'npx ebsync sync --forget --connection ${w}'`).join(' and ');
  return (
    `Connection ${connectionId} is not mirrored now: ${file} holds the records of ${them}, and one ` +
    `connection writes a file. Run 'npx ebsync sync --connection ${connectionId} --to sqlite:ANOTHER.db' ` +
    `for a file of its own, or ${forget} and start again.\n`
  );
}

async function mainJobSteps(
  client: Client,
  config: Config,
  logger: Logger,
  demo: DemoService | undefined,
  stopped: AbortSignal,
): Promise<void> {
  await untilOwnWorkerPolls(client, config, stopped);
  let connectionId: string | undefined;
  if (demo) connectionId = await ensureDemoConnection(client, config, demo);
  else {
    const all = await listConnections(client, config);
    // A start against the user's own service after the demo: the demo's connection still runs,
    // and its sandbox runs only beside a demo start. Mirroring it was a pass retrying
    // ECONNREFUSED against the stopped sandbox, while the user's business was not connected.
    const leftover = all.find((c) => isDemoLeftover(c, config));
    const connections = all.filter((c) => c !== leftover);
    // Its schedules and runs in flight could only fail there: set aside, or said why not.
    if (leftover) {
      process.stdout.write(await setDemoAside(client, config, leftover.connectionId, stopped));
    }
    if (connections.length === 0) {
      process.stdout.write(noConnectionText(config, leftover !== undefined));
      return;
    }
    if (connections.length > 1) {
      process.stdout.write(
        `${connections.length} connections: mirror each with 'npx ebsync sync --connection ID'.\n`,
      );
      return;
    }
    connectionId = connections[0]!.connectionId;
  }
  const destination = defaultDestination(config);
  // As `ebsync sync` refuses up front: the worker refuses the pass anyway, and a pass that
  // failed said less than this of what to run. The stack goes on, as with no connection.
  const others = await otherWriters(config, connectionId, destination);
  if (others.length > 0) {
    process.stdout.write(otherWriterText(connectionId, destination, others));
    return;
  }
  // Back on demo data, the demo's schedules a start on the user's own service paused fire again.
  if (demo) process.stdout.write(await resumeDemoSchedules(client, connectionId));
  const { handle, attached } = await startOrAttach(client, config, {
    subjects: ['leads', 'events', 'appointments'],
    destination,
    full: false,
    connectionId,
  });
  // The demo keeps itself in step: defaults made once, never over a user's own change.
  const schedules = demo
    ? await ensureDefaultSchedules(client, config, connectionId, destination)
    : [];
  process.stdout.write(
    `${attached ? 'Attached to the mirror already running' : 'Mirroring leads, events and appointments'} ` +
      `of connection ${connectionId} into ${displayPath(destination.slice('sqlite:'.length))}\n`,
  );
  const detached = new Promise<void>((resolve) => {
    if (stopped.aborted) resolve();
    else stopped.addEventListener('abort', () => resolve(), { once: true });
  });
  const outcome = await watchMirror(handle, {
    detach: detached,
    interactive: process.stderr.isTTY === true,
    again: `ebsync sync --connection ${connectionId}`,
  });
  if (outcome === 'detached') return;
  const { progress, status } = outcome;
  const file = displayPath(destination.slice('sqlite:'.length));
  const completed = progress.phase === 'done' && status === 'COMPLETED';
  // A pass that failed before it wrote or found a row (the service away, the destination
  // another connection's) leaves nothing to query: the hint sent users to an empty file.
  const rows = progress.counts.written + progress.counts.unchanged > 0;
  const tryIt =
    completed || rows
      ? `The data is in ${file} (tables leads, lead_bookings, events, event_bookings, appointments). Try:\n` +
        `  sqlite3 ${file} "${TRY_QUERY}"\n`
      : '';
  process.stdout.write(`${summaryText(progress, status)}${tryIt}${scheduleLines(schedules)}`);
  if (completed) {
    logger.info({ workflowId: handle.workflowId }, 'mirror pass finished');
  } else {
    logger.warn(
      { workflowId: handle.workflowId, phase: progress.phase, status },
      'mirror pass finished without everything: see the summary above',
    );
  }
}

/**
 * The status page beside the main job. It is a view: a port in use makes it take a free one,
 * and any other failure is logged without stopping the stack.
 */
export async function startDevStatusPage(
  config: Config,
  logger: Logger,
): Promise<StatusServer | undefined> {
  const { openStatusPage, statusPageBanner } = await import('./status-server.js');
  try {
    let page: StatusServer;
    try {
      page = await openStatusPage(config);
    } catch (error) {
      if (!(error instanceof ListenRefusal && error.code === 'EADDRINUSE')) throw error;
      logger.warn({ port: config.status.port }, 'status page port in use; it takes a free port');
      page = await openStatusPage(config, { port: 0 });
    }
    process.stdout.write(statusPageBanner(config, page.url));
    return page;
  } catch (error) {
    logger.warn({ err: error }, 'the status page did not start');
    return undefined;
  }
}
