import { Command, CommanderError, Option } from 'commander';
import { VERSION } from '../worker/version.js';
import { reportFailure } from './errors.js';
import { registerDevCommands } from './temporal.js';
import { registerWorkerCommands } from './worker.js';
import { registerSandboxCommand } from './sandbox.js';
import { registerConnectionCommands } from './connections.js';

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

registerWorkerCommands(program);
registerDevCommands(program);
registerSandboxCommand(program);
registerConnectionCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Commander already printed its one line; help and version are successes.
    const ok = ['commander.helpDisplayed', 'commander.version', 'commander.help'];
    process.exitCode = ok.includes(error.code) ? 0 : 2;
  } else {
    process.exitCode = reportFailure(error);
  }
}
