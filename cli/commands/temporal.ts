import { Option, type Command } from 'commander';
import { intFlag, namespaceFlag } from '../options.js';
import type { ServerFlags } from '../temporal.js';

const run = () => import('../temporal.js');

function addServerFlags(command: Command): Command {
  return command
    .option('--ip <ip>', 'address to listen on', '127.0.0.1')
    .addOption(
      new Option('--port <port>', 'frontend (gRPC) port')
        .default(7233)
        .argParser(intFlag(1, 65535)),
    )
    .addOption(
      new Option('--ui-port <port>', 'web UI port (default: port + 1000)').argParser(
        intFlag(1, 65535),
      ),
    )
    .option(
      '--db-filename <file>',
      'SQLite file of the server (default: <EBSYNC_DATA_DIR>/temporal.db)',
    )
    .addOption(
      new Option('--namespace <name>', 'namespace created at start')
        .default('default')
        .argParser(namespaceFlag()),
    );
}

/** `ebsync temporal` and `ebsync dev`: their words and help; the work is in ../temporal.ts. */
export function registerDevCommands(program: Command): void {
  addServerFlags(
    program
      .command('temporal')
      .description(
        'Run a local Temporal dev server whose data persists in SQLite (under EBSYNC_DATA_DIR).',
      ),
  ).action(async (flags: ServerFlags) => (await run()).temporalCommand(flags));

  addServerFlags(
    program
      .command('dev')
      .description(
        'The main job (what `npm start` runs): a Temporal dev server (unless one already answers at ' +
          '--ip:--port when given, else at TEMPORAL_ADDRESS) and a worker connected to it; without EBS_BASE_URL, the sandbox with demo data and a ' +
          'connection to it; then a mirror pass into <EBSYNC_DATA_DIR>/mirror.db, and it keeps ' +
          'running until Ctrl-C.',
      ),
  ).action(async (flags: ServerFlags, command: Command) =>
    (await run()).devCommand({
      ...flags,
      // Given on the command line, --port and --ip decide where dev's server runs.
      portGiven: command.getOptionValueSource('port') === 'cli',
      ipGiven: command.getOptionValueSource('ip') === 'cli',
      namespaceGiven: command.getOptionValueSource('namespace') === 'cli',
    }),
  );
}
