import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bundleWorkflowCode,
  NativeConnection,
  Worker,
  type State,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import type { Config } from '../config/index.js';
import { readPemFile } from './pem-files.js';
import { createActivities } from '../activities/index.js';
import { endRuntime, installRuntime } from './runtime.js';
import { keepHeapsSmall } from './heap-mode.js';
import { workflowPlacement } from './workflow-placement.js';
import { temporalConnectionOptions } from './temporal-connection.js';
import type { Logger } from './logger.js';
import { VERSION } from './version.js';
import { dataConverter, encryptionKeyRing, failureConverterPath } from './data-converter.js';
import { crmRefreshTokens } from '../store/crm-refresh-tokens.js';
import { sqliteTokenJournal } from '../store/token-journal.js';
import { sqliteAutomationStore } from '../store/automation-endpoints.js';
import { ConnectionTokens } from '../activities/connection-tokens.js';
import { connectClient } from './temporal-client.js';
import { runningSealedElsewhere } from './workflow-keys.js';
import { keysApartLine, livePollers, workerIdentity } from './worker-identity.js';
import { createMirrorDeps } from './mirror-deps.js';
import { setConnectionRate } from './rate-limits.js';
import { drainWaker } from './drain-wake.js';
import { storeRefusal } from './store-refusal.js';

/**
 * Source of the workflow bundle: the TypeScript, the code the replay tests check, whether this
 * module runs from source or from the compiled tree in dist/ (the sources are then one folder
 * up); the compiled .js only where no TypeScript ships beside it.
 */
export function workflowsPath(): string {
  for (const rel of [
    '../workflows/index.ts',
    '../../workflows/index.ts',
    '../workflows/index.js',
  ]) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error('workflows/index is missing next to the worker');
}

/**
 * What a workflow bundle is made of: the workflows, and the failure converter that seals the
 * failures they raise (worker/failure-converter.cjs), which the bundle must hold itself.
 */
export function workflowBundleSources(): { workflowsPath: string; failureConverterPath: string } {
  return { workflowsPath: workflowsPath(), failureConverterPath: failureConverterPath() };
}

/**
 * Bundles the workflows with webpack's per-module report kept at debug level: at info it is
 * one multi-kilobyte log line at every start.
 */
/** The workflows bundled, the bundler's chatter sent to `logger` at debug. */
export async function bundleQuietly(logger: Logger): Promise<{ code: string }> {
  const started = Date.now();
  const { code } = await bundleWorkflowCode({
    ...workflowBundleSources(),
    logger: {
      log: () => undefined,
      trace: () => undefined,
      debug: (message) => logger.debug(message),
      info: (message) => logger.debug(message),
      warn: (message, meta) => logger.warn(meta ?? {}, message),
      error: (message, meta) => logger.error(meta ?? {}, message),
    },
  });
  logger.info({ ms: Date.now() - started }, 'workflows bundled');
  return { code };
}

/**
 * The bundle `npm run build` made (dist/workflow-bundle.js) when this module runs from that
 * compiled tree: cli/ebsync.js runs dist/ only while its stamp matches the sources, so the
 * bundle is of the workflows as they are. Undefined when running from the TypeScript.
 */
export function prebuiltWorkflowBundle(): { codePath: string } | undefined {
  const codePath = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));
  const stamp = fileURLToPath(new URL('../build-stamp.json', import.meta.url));
  return existsSync(codePath) && existsSync(stamp) ? { codePath } : undefined;
}

export interface WorkerHandle {
  worker: Worker;
  connection: NativeConnection;
  /** Resolves when the worker has stopped (after a signal or shutdown()). */
  run(): Promise<void>;
  shutdown(): void;
}

export interface CreateWorkerOptions {
  config: Config;
  logger: Logger;
  /** A prebuilt bundle (tests build one once); otherwise workflows are bundled at start. */
  workflowBundle?: WorkflowBundleOption;
  taskQueue?: string;
}

/**
 * How long a workflow task or a query waits for the worker that has the workflow cached
 * before Temporal gives it to any worker of the queue. A worker killed with SIGKILL leaves its
 * workflows pinned to it this long: with the SDK's 10 s, a query of a connection it had run
 * (`ebsync sync`, `ebsync connections`, a mirror activity asking for the token) waited out the
 * command's own 10 s deadline and said no worker ran it while another one was polling. 5 s is
 * the Java SDK's default; a worker that cannot take a task of its own within it is swamped,
 * and any worker taking it replays the history, which costs time, not correctness.
 */
const STICKY_QUEUE_TIMEOUT = '5 seconds';

/** Worker states from the start of its stop on: the grace before activities are cancelled runs. */
const STOPPING_STATES: ReadonlySet<State> = new Set<State>([
  'STOPPING',
  'DRAINING',
  'DRAINED',
  'STOPPED',
  'FAILED',
]);
/** How often run() looks whether the worker's stop has begun (the SDK has no event for it). */
const STATE_CHECK_MS = 200;

export async function createWorker(options: CreateWorkerOptions): Promise<WorkerHandle> {
  const { config, logger } = options;
  keepHeapsSmall();
  // A stop asked for from here on is honoured once the worker exists: the runtime remembers it.
  installRuntime(logger);
  // What start-up opened is closed if a later step fails, and the runtime ended: either alone
  // keeps the process running (the runtime also takes SIGTERM for workers), so a bad setting
  // found during start-up would leave a worker that never exits.
  const opened: (() => unknown)[] = [endRuntime];
  try {
    const converter = dataConverter(config, 'worker');
    const codec = converter.payloadCodecs?.[0];
    if (!codec) throw new Error('the data converter has no payload codec');
    const ca = config.service.caFile
      ? readPemFile('EBS_CA_FILE', config.service.caFile, 'CERTIFICATE')
      : undefined;
    // After the settings read here were found good: a refused one is the only line printed.
    logger.info({ taskQueue: options.taskQueue ?? config.temporal.taskQueue }, 'worker starting');
    const connection = await NativeConnection.connect(temporalConnectionOptions(config));
    opened.push(() => connection.close());
    const journal = sqliteTokenJournal(join(config.dataDir, 'token-journal.db'), codec);
    opened.push(() => journal.close());
    const refreshTokens = crmRefreshTokens(config, codec);
    opened.push(() => refreshTokens.close());
    // Beside the webhook registrations (worker/webhook-receiver.ts): CLI and workers share it.
    const automations = sqliteAutomationStore(join(config.dataDir, 'webhooks.db'), codec, {
      httpsOnly: config.mode === 'production',
      // As long as the changes it tells of are kept (the dedupe window), a day at least.
      logRetentionMs: Math.max(config.webhooks.dedupeWindow, 24 * 3_600_000),
    });
    opened.push(() => automations.close());
    // Activities ask connection workflows for credentials through a client of their own.
    // Its calls end when the worker cancels its activities (run() below): a query that only a
    // workflow worker could answer waits on, and this one has stopped taking workflow tasks.
    const activitiesCancelled = new AbortController();
    const temporal = await connectClient(config, { endCallsOn: activitiesCancelled.signal });
    opened.push(() => temporal.close());
    const taskQueue = options.taskQueue ?? config.temporal.taskQueue;
    const identity = workerIdentity(encryptionKeyRing(config).keys);
    // A server without task-queue config (older than 1.29, or a key without the permission)
    // still runs syncs, unpaced: say so once rather than refuse to start.
    await setConnectionRate(
      temporal.client.workflowService,
      { namespace: config.temporal.namespace, taskQueue, identity },
      config.service.rateLimit,
    ).catch((error: unknown) =>
      logger.warn(
        { err: error, taskQueue },
        'could not set the per-connection rate on the task queue; syncs are not rate-limited (docs/rate-limits.md)',
      ),
    );
    // A worker whose keys cannot open the workflows already running on its queue takes their
    // tasks and fails each one, a log line every few seconds: said once here, with why and
    // what to do. A warning, not a refusal: one workflow whose keys were retired must not keep
    // a whole deployment's workers from starting. (`ebsync dev` refuses, before this.)
    const foreign = await runningSealedElsewhere(temporal.client, config, taskQueue).catch(
      () => undefined,
    );
    if (foreign !== undefined) {
      logger.warn(
        { workflowId: foreign, taskQueue },
        `workflows running on this task queue were sealed with keys this worker lacks ('${foreign}' ` +
          'among them): an ebsync with other EBSYNC_ENCRYPTION_KEYS or EBSYNC_DATA_DIR started ' +
          'them (or the data directory was made again); their tasks fail here until the workers ' +
          'have those keys, or the workflows are ended',
      );
    }
    // Workers of other keys polling this queue now: each would fail the other's tasks.
    const apart = await livePollers(temporal.client, config.temporal.namespace, taskQueue)
      .then((others) => keysApartLine(taskQueue, [identity, ...others]))
      .catch(() => undefined);
    if (apart !== undefined) logger.warn({ taskQueue }, apart);
    const mirror = createMirrorDeps(
      config,
      temporal.client,
      new ConnectionTokens(temporal.client),
      ca,
      { refreshTokens },
      (error) => logger.debug({ err: error }, 'a rate-limit signal was not delivered'),
    );
    opened.push(() => mirror.close());
    // The store, opened before any task is taken: a worker whose store does not open took
    // activities it could not run, and said so nowhere but the status page's inbox line.
    await mirror.ledger().catch((error: unknown) => {
      throw storeRefusal(config, error);
    });
    const activities = createActivities({
      version: VERSION,
      startedAt: Date.now(),
      journal,
      // Per-record workflows of an earlier version hand their reads to the drains.
      mirror: { ...mirror, wakeDrain: drainWaker(temporal.client, taskQueue) },
      automations,
      codec,
      ...(ca ? { ca } : {}),
    });
    const prebuilt = options.workflowBundle ? undefined : prebuiltWorkflowBundle();
    if (prebuilt) logger.info('workflows from the build (dist/workflow-bundle.js)');
    const worker = await Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue,
      identity,
      activities,
      dataConverter: converter,
      workflowBundle: options.workflowBundle ?? prebuilt ?? (await bundleQuietly(logger)),
      shutdownGraceTime: config.worker.shutdownGrace,
      // After the grace, activities are asked to cancel; one that cannot (a token refresh in
      // flight must not be abandoned) gets another minute before the worker gives up on it.
      shutdownForceTime: config.worker.shutdownGrace + 60_000,
      maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivities,
      stickyQueueScheduleToStartTimeout: STICKY_QUEUE_TIMEOUT,
      ...workflowPlacement(config.worker.workflowThread),
    });
    return {
      worker,
      connection,
      async run() {
        // The worker cancels running activities once shutdownGraceTime has passed since its
        // stop began (a signal, or shutdown()); the calls they have out to Temporal end then
        // too. A mirror page asking a connection's status when Ctrl-C came held the worker,
        // and `ebsync dev`, for 29 s after its 1 s grace: the query waited for a workflow
        // task that no worker would take any more.
        let graceEnd: NodeJS.Timeout | undefined;
        const watch = setInterval(() => {
          if (graceEnd || !STOPPING_STATES.has(worker.getState())) return;
          graceEnd = setTimeout(() => activitiesCancelled.abort(), config.worker.shutdownGrace);
        }, STATE_CHECK_MS);
        watch.unref();
        try {
          await worker.run();
        } finally {
          clearInterval(watch);
          clearTimeout(graceEnd);
          activitiesCancelled.abort();
          journal.close();
          refreshTokens.close();
          automations.close();
          await mirror.close();
          await temporal.close();
          await connection.close();
        }
      },
      shutdown() {
        if (worker.getState() === 'RUNNING') worker.shutdown();
      },
    };
  } catch (error) {
    for (const close of opened.reverse()) {
      await Promise.resolve()
        .then(close)
        .catch(() => undefined);
    }
    throw error;
  }
}
