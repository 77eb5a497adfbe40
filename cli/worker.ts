import { WorkflowFailedError } from '@temporalio/client';
import { ConfigError, type Config } from '../config/index.js';
import { loadStartupConfig } from './startup-config.js';
import { createLogger, type Logger } from '../worker/logger.js';
import { connectClient, unreachableLine } from '../worker/temporal-client.js';
import { TemporalNamespaceMissingError } from '../worker/temporal-errors.js';
import { createWorker } from '../worker/worker.js';
import { generateKeyLine } from '../worker/data-converter.js';
import { healthCheckWorkflow } from '../workflows/health.js';
import { runAction, UserError } from './errors.js';
import { formatDuration } from './options.js';
import { runUntilStopped } from './stopped-exit.js';
import { requireWorker } from './worker-check.js';

export function loggerFor(config: Config): Logger {
  return createLogger({ level: config.log.level, format: config.log.format });
}

/** Connection failures to Temporal become one actionable line. */
export function unreachable(config: Config, error: unknown): UserError {
  return new UserError(unreachableLine(config, error));
}

export async function runWorker(config: Config, logger: Logger): Promise<void> {
  let handle;
  try {
    handle = await createWorker({ config, logger });
  } catch (error) {
    // A setting found wrong at start-up (the store does not open, the namespace is not
    // there) says so itself.
    if (error instanceof ConfigError || error instanceof TemporalNamespaceMissingError) throw error;
    if (/connect|transport|dns|refused|unavailable/i.test(String(error))) {
      throw unreachable(config, error);
    }
    throw error;
  }
  logger.info(
    {
      address: config.temporal.address,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      shutdownGraceMs: config.worker.shutdownGrace,
    },
    'worker started',
  );
  // Temporal's runtime takes SIGINT and SIGTERM and begins the stop; the log says which came,
  // so a worker stopped from outside is told from one that failed.
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const heard = (signal: NodeJS.Signals): void => {
    logger.info({ signal }, 'stop asked by signal: polling ends, running activities finish');
  };
  for (const signal of signals) process.on(signal, heard);
  try {
    await handle.run();
  } finally {
    for (const signal of signals) process.off(signal, heard);
  }
  logger.info('worker stopped');
}

/** `ebsync worker`. */
export async function workerCommand(): Promise<void> {
  await runUntilStopped(async () => {
    const config = loadStartupConfig();
    await runWorker(config, loggerFor(config));
  });
}

/** `ebsync keygen`. */
export function keygenCommand(options: { id?: string }): Promise<void> {
  return runAction(() => {
    if (options.id !== undefined && !/^[A-Za-z0-9_.-]{1,64}$/.test(options.id)) {
      throw new UserError(
        `--id='${options.id}' is not allowed: expected 1-64 letters, digits, '.', '_' or '-'`,
        2,
      );
    }
    process.stdout.write(`${generateKeyLine(options.id)}\n`);
    return Promise.resolve();
  });
}

/** `ebsync doctor`. */
export function doctorCommand(options: { timeout: number }): Promise<void> {
  return runAction(async () => {
    const config = loadStartupConfig();
    const { client, close } = await connectClient(config);
    try {
      await requireWorker(client, config);
      const r = await client.workflow
        .execute(healthCheckWorkflow, {
          taskQueue: config.temporal.taskQueue,
          workflowId: `ebsync-doctor-${Date.now()}`,
          workflowExecutionTimeout: options.timeout,
        })
        .catch((error: unknown) => {
          if (error instanceof WorkflowFailedError) {
            throw new UserError(
              `no worker answered on task queue '${config.temporal.taskQueue}' within ${formatDuration(options.timeout)}; start one with 'npm start' or 'ebsync worker'`,
            );
          }
          throw error;
        });
      process.stdout.write(
        `ok: Temporal ${config.temporal.address} (namespace ${config.temporal.namespace}); ` +
          `worker ebsync ${r.worker.version} on ${r.worker.hostname} pid ${r.worker.pid}, ` +
          `up ${r.worker.uptimeSeconds}s, task queue ${r.taskQueue}\n`,
      );
    } finally {
      await close();
    }
  });
}
