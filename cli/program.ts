import { Command, Option } from 'commander';
import { scrubText } from '../worker/redact.js';
import { VERSION } from '../worker/version.js';
import { shownSafely } from './shown-text.js';
import { registerConnectionCommands } from './commands/connections.js';
import { registerCrmCommands } from './commands/crm.js';
import { registerPostgresCommand } from './commands/postgres.js';
import { registerSandboxCommand } from './commands/sandbox.js';
import { registerScheduleCommands } from './commands/schedule.js';
import { registerStatusCommand } from './commands/status.js';
import { registerSyncCommand } from './commands/sync.js';
import { registerDevCommands } from './commands/temporal.js';
import { registerWebhookCommands } from './commands/webhooks.js';
import { registerWorkerCommands } from './commands/worker.js';

/**
 * Commander's parse error as ebsync says its own: 'ebsync: …' on one line, its suggestion
 * folded in, and where to look when it names no allowed values.
 */
export function parseErrorLine(text: string, command = 'ebsync'): string {
  const [first = '', ...rest] = text.trim().split('\n');
  const suggestion = rest
    .map((line) => line.trim().replace(/^\((Did you mean .*)\)$/, (_, s: string) => s))
    .filter(Boolean)
    .join(' ');
  const message = first.replace(/^error: /, '');
  const hint = /^unknown command/.test(message)
    ? `'${command} --help' lists the commands`
    : /^(unknown option|too many arguments|missing required argument|option '.*' argument missing)/.test(
          message,
        )
      ? "the command's --help lists what it takes"
      : '';
  const tail = [suggestion && suggestion.charAt(0).toLowerCase() + suggestion.slice(1), hint]
    .filter(Boolean)
    .join(suggestion.endsWith('?') ? ' ' : '; ');
  // An argument's value is echoed ("argument '…' is invalid"): shown as errors.ts shows text.
  return `ebsync: ${shownSafely(scrubText(`${message}${tail ? ` (${tail})` : ''}`))}\n`;
}

/**
 * `ebsync help bogus`: commander answers a help topic it does not know with the whole help,
 * as an error. Said instead as the unknown command it is, in the one line a mistyped command
 * gets (exit 2), before that help is written.
 */
function refuseUnknownHelpTopic(group: Command): void {
  group.on('beforeHelp', ({ error }: { error: boolean }) => {
    const [word, topic] = group.args;
    if (error && word === 'help' && topic !== undefined) {
      group.error(`error: unknown command '${topic}'`, {
        exitCode: 2,
        code: 'commander.unknownCommand',
      });
    }
  });
}

/**
 * The whole `ebsync` command definition, without running anything. Defining it loads only
 * commander and the modules under commands/ (words, options, help); each action loads its
 * command's implementation when it runs, so `--version`, `--help` and a mistyped flag answer
 * without the Temporal SDK, the API client or a database driver. Errors throw a
 * CommanderError (exitOverride) after commander has printed its one line.
 */
export function buildProgram(): Command {
  const program = new Command()
    .name('ebsync')
    .description(
      'Connector and sync worker for the Event Business Service, on Temporal.\n' +
        'Configuration comes from environment variables (see README "Configuration").',
    )
    .version(VERSION, '-v, --version', 'print the ebsync version')
    .exitOverride()
    // Commands made after this inherit it: every parse error is one line, as ebsync's own.
    .configureOutput({ outputError: (text, write) => write(parseErrorLine(text)) });

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
  // A flag given an empty value (`--db-filename ''`, a variable that was not set) names
  // nothing: it was taken for the current folder, or for the flag left out, so the command
  // went on to fail about something else, or fell back to a setting. Refused for every flag.
  program.hook('preAction', (_, action) => {
    for (const option of action.options) {
      const key = option.attributeName();
      if (action.getOptionValue(key) === '' && action.getOptionValueSource(key) === 'cli') {
        action.error(`${option.long ?? option.flags} is empty`, {
          exitCode: 2,
          code: 'ebsync.emptyOption',
        });
      }
    }
  });

  for (const register of [
    registerWorkerCommands,
    registerDevCommands,
    registerSandboxCommand,
    registerPostgresCommand,
    registerConnectionCommands,
    registerSyncCommand,
    registerScheduleCommands,
    registerCrmCommands,
    registerWebhookCommands,
    registerStatusCommand,
  ]) {
    register(program);
  }
  // A mistyped subcommand (`ebsync schedule ad`) points at its own group's help.
  const withPaths = (command: Command, path: string): void => {
    for (const sub of command.commands) {
      const subPath = `${path} ${sub.name()}`;
      if (sub.commands.length > 0) {
        sub.configureOutput({ outputError: (text, write) => write(parseErrorLine(text, subPath)) });
        refuseUnknownHelpTopic(sub);
      }
      withPaths(sub, subPath);
    }
  };
  refuseUnknownHelpTopic(program);
  withPaths(program, 'ebsync');
  return program;
}
