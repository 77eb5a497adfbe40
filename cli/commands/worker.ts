import { Option, type Command } from 'commander';
import { durationFlag } from '../options.js';

const run = () => import('../worker.js');

/** `ebsync worker`, `keygen` and `doctor`: their words and help; the work is in ../worker.ts. */
export function registerWorkerCommands(program: Command): void {
  program
    .command('worker')
    .description(
      'Run a worker: polls TEMPORAL_TASK_QUEUE and runs ebsync workflows and activities.\n' +
        'SIGINT/SIGTERM stop polling and let running activities finish within EBSYNC_SHUTDOWN_GRACE.',
    )
    .action(async () => (await run()).workerCommand());

  program
    .command('keygen')
    .description(
      'Print a new payload-encryption key line for EBSYNC_ENCRYPTION_KEYS (prepend it to rotate).',
    )
    .option('--id <id>', 'key id stored with every payload it seals')
    .action(async (options: { id?: string }) => (await run()).keygenCommand(options));

  program
    .command('doctor')
    .description('Check that Temporal is reachable and a worker answers on the task queue.')
    .addOption(
      new Option('--timeout <seconds>', 'how long to wait for the worker to answer (15, 500ms, 1m)')
        .default(15_000, '15s')
        .argParser(durationFlag(100)),
    )
    .action(async (options: { timeout: number }) => (await run()).doctorCommand(options));
}
