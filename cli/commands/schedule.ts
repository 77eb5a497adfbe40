import { Option, type Command } from 'commander';
import { connectionFlag, durationFlag } from '../options.js';
import type { CreateFlags, ScheduleVerb } from '../schedules.js';
import { DESTINATION_HELP } from './sync.js';

const run = () => import('../schedules.js');

const DEFAULT_CATCHUP_WINDOW_MS = 3_600_000;

/** `ebsync schedule <verb> <id>`. */
function registerIdCommand(
  group: Command,
  name: ScheduleVerb,
  description: string,
  withNote = false,
): void {
  const command = group.command(name).description(description).argument('<id>', 'schedule id');
  if (withNote) command.option('--note <text>', 'why (shown by describe)');
  command.action(async (id: string, flags: { note?: string }) =>
    (await run()).scheduleIdCommand(name, id, flags),
  );
}

/** `ebsync schedule …`: its words and help; the work is in ../schedules.ts. */
export function registerScheduleCommands(program: Command): void {
  const group = program
    .command('schedule')
    .description(
      'Scheduled mirror passes on Temporal Schedules: create, list, describe, pause, resume, ' +
        'trigger, delete. See docs/schedules.md.',
    );

  group
    .command('create')
    .description(
      'Schedule the mirror of a connection: --every or --cron. Full passes skip a firing while ' +
        'the last one runs; incremental ones buffer one. The id is sync-<connection>-<what>-<mode>.',
    )
    .argument('[what]', 'leads, events, appointments or all', 'all')
    .addOption(
      new Option('--every <duration>', 'interval (30s, 15m, 6h)')
        .argParser(durationFlag(1000))
        .conflicts('cron'),
    )
    .option('--cron <expression>', "cron expression, e.g. '0 3 * * *'")
    .option('--timezone <zone>', 'time zone of --cron (default: this machine’s)')
    .option('--full', 'full passes (default: incremental)')
    .option('--to <destination>', DESTINATION_HELP)
    .option('--connection <id>', 'connection to mirror (default: the only one)', connectionFlag())
    .addOption(
      new Option(
        '--catchup-window <duration>',
        'how late a firing missed while Temporal was down may still run',
      )
        .default(DEFAULT_CATCHUP_WINDOW_MS, '1h')
        .argParser(durationFlag(10_000, 7 * 86_400_000)),
    )
    .addOption(
      new Option('--jitter <duration>', 'random delay of each firing, up to this')
        .default(0, 'none')
        .argParser(durationFlag(0)),
    )
    .option('--paused', 'create it paused')
    .option(
      '--no-check-destination',
      'create it without opening the database from this machine first (for one only the workers reach)',
    )
    .action(async (what: string, flags: CreateFlags) =>
      (await run()).scheduleCreateCommand(what, flags),
    );

  group
    .command('list')
    .description('List the mirror schedules, with state, timing and next run.')
    .option('--connection <id>', 'only this connection’s', connectionFlag())
    .option('--json', 'print JSON')
    .action(async (flags: { connection?: string; json?: boolean }) =>
      (await run()).scheduleListCommand(flags),
    );

  group
    .command('describe')
    .description('Show one schedule: what it mirrors, when, its policies, next and recent runs.')
    .argument('<id>', 'schedule id')
    .option('--json', 'print JSON')
    .action(async (id: string, flags: { json?: boolean }) =>
      (await run()).scheduleDescribeCommand(id, flags),
    );

  registerIdCommand(
    group,
    'pause',
    'Pause a schedule: it fires nothing until resumed (a run going on goes on).',
    true,
  );
  registerIdCommand(group, 'resume', 'Resume a paused schedule.', true);
  registerIdCommand(group, 'trigger', 'Run a schedule’s pass now, under its own overlap policy.');
  registerIdCommand(group, 'delete', 'Delete a schedule; a run going on finishes.');
}
