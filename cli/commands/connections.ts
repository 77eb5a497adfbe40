import { Option, type Command } from 'commander';
import type { ConnectFlags } from '../connections.js';
import { CONNECTIONS_SUBCOMMANDS } from '../../config/connection-names.js';
import { durationFlag, portFlag } from '../options.js';

const run = () => import('../connections.js');

/** `connections pause|resume <id>`: the one switch the connection workflow keeps. */
function registerPauseCommand(
  parent: Command,
  name: (typeof CONNECTIONS_SUBCOMMANDS)[number],
): void {
  parent
    .command(name)
    .description(
      name === 'pause'
        ? "Pause a connection: its syncs wait and make no requests to the service (nor token refreshes) until 'resume'."
        : 'Resume a paused connection: its waiting syncs go on.',
    )
    .argument('<id>', 'connection id')
    .action(async (id: string) => (await run()).pauseCommand(name, id));
}

/**
 * `ebsync connect`, `connections` (with pause and resume) and `disconnect`: their words and
 * help; the work is in ../connections.ts.
 */
export function registerConnectionCommands(program: Command): void {
  program
    .command('connect')
    .description(
      'Connect a business: an installed app through the browser (OAuth with PKCE), or an integration key with --api-key.\n' +
        'Starts the connection workflow that owns the credentials; a worker must be running.',
    )
    .option('--name <id>', 'connection id', 'default')
    .option(
      '--api-key [key]',
      "connect with an integration key: EBS_API_KEY, or '-' to read it from standard input (a key typed here shows in ps)",
    )
    .option('--client-id <id>', 'OAuth client id of the installed app (default: EBS_CLIENT_ID)')
    .addOption(
      new Option('--redirect-port <port>', 'local port of the OAuth redirect (0 = any free port)')
        .default(8976)
        .argParser(portFlag()),
    )
    .addOption(
      new Option('--timeout <seconds>', 'how long to wait for the approval (90, 30s, 5m)')
        .default(300_000, '300s')
        .argParser(durationFlag(1_000)),
    )
    .action(async (flags: ConnectFlags) => (await run()).connectCommand(flags));

  const connections = program
    .command('connections')
    .description(
      'List connections and their state (active, needs_reauth, paused), or inspect one; pause and resume one.',
    )
    .argument('[id]', 'a connection to show in full')
    .option('--json', 'print JSON')
    .action(async (id: string | undefined, flags: { json?: boolean }) =>
      (await run()).connectionsCommand(id, flags),
    );
  for (const name of CONNECTIONS_SUBCOMMANDS) registerPauseCommand(connections, name);

  program
    .command('disconnect')
    .description(
      "Stop a connection's workflow and forget its credentials here (its webhook registration too; its drain stops). An installed app's grant is also revoked at the service; " +
        "an integration key (or legacy app credentials) still works there until revoked in the service's settings.",
    )
    .argument('<id>', 'connection id')
    .action(async (id: string) => (await run()).disconnectCommand(id));
}
