import { Command, Option } from 'commander';
import { VERSION } from '../worker/version.js';

type Registrar = (program: Command) => void;

/**
 * Command groups load on demand: `ebsync sandbox` need not load the Temporal SDK, which
 * costs about a second at every start. Help and unknown commands load every group.
 */
const GROUPS: Record<string, () => Promise<Registrar>> = {
  worker: async () => (await import('./worker.js')).registerWorkerCommands,
  temporal: async () => (await import('./temporal.js')).registerDevCommands,
  sandbox: async () => (await import('./sandbox.js')).registerSandboxCommand,
  connections: async () => (await import('./connections.js')).registerConnectionCommands,
  sync: async () => (await import('./sync.js')).registerSyncCommand,
  schedule: async () => (await import('./schedules.js')).registerScheduleCommands,
  crm: async () => (await import('./crm.js')).registerCrmCommands,
  webhooks: async () => (await import('./webhooks.js')).registerWebhookCommands,
  status: async () => (await import('./status.js')).registerStatusCommand,
};
const GROUP_OF: Record<string, string> = {
  worker: 'worker',
  doctor: 'worker',
  keygen: 'worker',
  temporal: 'temporal',
  dev: 'temporal',
  sandbox: 'sandbox',
  connect: 'connections',
  connections: 'connections',
  disconnect: 'connections',
  sync: 'sync',
  schedule: 'schedule',
  mapping: 'crm',
  destinations: 'crm',
  webhooks: 'webhooks',
  status: 'status',
};

/**
 * The whole `ebsync` command definition, without running anything: `args` (the words after
 * `ebsync`) only choose which command groups to load. Errors throw a CommanderError
 * (exitOverride) after commander has printed its one line.
 */
export async function buildProgram(args: readonly string[] = []): Promise<Command> {
  const program = new Command()
    .name('ebsync')
    .description(
      'Connector and sync worker for the Event Business Service, on Temporal.\n' +
        'Configuration comes from environment variables (see README "Configuration").',
    )
    .version(VERSION, '-v, --version', 'print the ebsync version')
    .exitOverride();

  program.addOption(
    new Option('--log-level <level>', 'override EBSYNC_LOG_LEVEL').choices([
      'trace',
      'debug',
      'info',
      'warn',
      'error',
      'fatal',
      'silent',
    ]),
  );
  program.hook('preAction', (command) => {
    const level = command.opts<{ logLevel?: string }>().logLevel;
    if (level) process.env.EBSYNC_LOG_LEVEL = level;
  });

  const named = args.find((arg) => !arg.startsWith('-'));
  const group = named === undefined ? undefined : GROUP_OF[named];
  for (const name of group ? [group] : Object.keys(GROUPS)) {
    const load = GROUPS[name];
    if (load) (await load())(program);
  }
  return program;
}
