import { WorkflowFailedError } from '@temporalio/client';
import type { Command } from 'commander';
import { loadConfig, type Config } from '../config/index.js';
import { createLogger, type Logger } from '../worker/logger.js';
import { connectClient } from '../worker/temporal-client.js';
import { createWorker } from '../worker/worker.js';
import { generateKeyLine } from '../worker/data-converter.js';
import type { HealthReport } from '../workflows/index.js';
import { runAction, UserError } from './errors.js';

export function loggerFor(config: Config): Logger {
  return createLogger({ level: config.log.level, format: config.log.format });
}

/** Connection failures to Temporal become one actionable line. */
export function unreachable(config: Config, error: unknown): UserError {
  const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
  return new UserError(
    `cannot reach Temporal at ${config.temporal.address} (${reason}); start a local one with 'ebsync temporal' or set TEMPORAL_ADDRESS`,
  );
}

export async function runWorker(config: Config, logger: Logger): Promise<void> {
  let handle;
  try {
    handle = await createWorker({ config, logger });
  } catch (error) {
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
  await handle.run();
  logger.info('worker stopped');
}

export function registerWorkerCommands(program: Command): void {
  program
    .command('worker')
    .description(
      'Run a worker: polls TEMPORAL_TASK_QUEUE and runs ebsync workflows and activities.\n' +
        'SIGINT/SIGTERM stop polling and let running activities finish within EBSYNC_SHUTDOWN_GRACE.',
    )
    .action(() =>
      runAction(async () => {
        const config = loadConfig();
        await runWorker(config, loggerFor(config));
      }),
    );

  program
    .command('keygen')
    .description(
      'Print a new payload-encryption key line for EBSYNC_ENCRYPTION_KEYS (prepend it to rotate).',
    )
    .option('--id <id>', 'key id stored with every payload it seals')
    .action((options: { id?: string }) =>
      runAction(() => {
        if (options.id !== undefined && !/^[A-Za-z0-9_.-]{1,64}$/.test(options.id)) {
          throw new UserError(
            `--id='${options.id}' is not allowed: expected 1-64 letters, digits, '.', '_' or '-'`,
            2,
          );
        }
        process.stdout.write(`${generateKeyLine(options.id)}\n`);
        return Promise.resolve();
      }),
    );

  program
    .command('doctor')
    .description('Check that Temporal is reachable and a worker answers on the task queue.')
    .option('--timeout <seconds>', 'how long to wait for a worker', '15')
    .action((options: { timeout: string }) =>
      runAction(async () => {
        const config = loadConfig();
        const seconds = Number(options.timeout);
        if (!Number.isFinite(seconds) || seconds <= 0) {
          throw new UserError(
            `--timeout='${options.timeout}' is not allowed: expected a positive number of seconds`,
            2,
          );
        }
        const { client, close } = await connectClient(config);
        try {
          const r = await client.workflow
            .execute<() => Promise<HealthReport>>('healthCheckWorkflow', {
              taskQueue: config.temporal.taskQueue,
              workflowId: `ebsync-doctor-${Date.now()}`,
              workflowExecutionTimeout: `${seconds}s`,
            })
            .catch((error: unknown) => {
              if (error instanceof WorkflowFailedError) {
                throw new UserError(
                  `no worker answered on task queue '${config.temporal.taskQueue}' within ${seconds}s; start one with 'ebsync worker'`,
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
      }),
    );
}
