import { InvalidArgumentError, Option, type Command } from 'commander';
import { CRM_FAKES, type CrmFakeName } from '../../sandbox/crm/names.js';
import { intFlag, portFlag } from '../options.js';
import type { SandboxFlags } from '../sandbox.js';

function crmList(value: string): CrmFakeName[] {
  const names = value.split(',').map((n) => n.trim());
  const unknown = names.filter((n) => !(CRM_FAKES as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0) {
    throw new InvalidArgumentError(`Expected a comma-separated list of ${CRM_FAKES.join(', ')}.`);
  }
  return [...new Set(names)] as CrmFakeName[];
}

/** A seed is any short text without control characters (numbers are read as text too). */
function seedFlag(value: string): string {
  if (!/^[\x20-\x7e]{1,64}$/.test(value) || value.trim() === '') {
    throw new InvalidArgumentError('Expected 1 to 64 printable ASCII characters.');
  }
  return value;
}

/** The sandbox's defaults for the settings ebsync must be told of when they differ. */
export const SANDBOX_DEFAULTS = { reachLimit: 10_000, maxPer: 100, rateLimit: 0 } as const;

/** `ebsync sandbox`: its words and help; the work is in ../sandbox.ts. */
export function registerSandboxCommand(program: Command): void {
  program
    .command('sandbox')
    .description(
      'Run a local, stateful stand-in for the Event Business Service (API, OAuth server, webhooks, admin API).',
    )
    .addOption(
      new Option('--port <port>', 'port to listen on (0 picks a free one)')
        .default(4010)
        .argParser(portFlag()),
    )
    .option('--host <host>', 'address to listen on (loopback unless --allow-remote)', '127.0.0.1')
    .option(
      '--allow-remote',
      'listen on a non-loopback --host: its OAuth consent then approves for anyone who reaches it',
    )
    .option('--db <file>', 'SQLite file to keep data in (default: in memory)')
    .option('--http', 'plain HTTP instead of HTTPS (loopback only)')
    .option(
      '--api-key <key>',
      "fix the full-permission integration key (ik_...): '-' reads it from standard input (default: EBS_SANDBOX_API_KEY, else random; a key typed here shows in ps)",
    )
    .addOption(
      new Option('--rate-limit <n>', 'requests per second per credential (0 = none)')
        .default(SANDBOX_DEFAULTS.rateLimit)
        .argParser(intFlag(0)),
    )
    .addOption(
      new Option('--rate-limit-mode <mode>', 'how the limit answers')
        .choices(['429', '403'])
        .default('429'),
    )
    .addOption(
      new Option('--reach-limit <n>', 'results past this position are never returned')
        .default(SANDBOX_DEFAULTS.reachLimit)
        .argParser(intFlag(1)),
    )
    .addOption(
      new Option('--max-per <n>', 'largest page size granted')
        .default(SANDBOX_DEFAULTS.maxPer)
        .argParser(intFlag(1)),
    )
    .addOption(
      new Option('--token-ttl <seconds>', 'access-token lifetime of the OAuth server')
        .default(3600)
        .argParser(intFlag(1)),
    )
    .option(
      '--cert-dir <dir>',
      'where the generated certificate is kept (default: <EBSYNC_DATA_DIR>/sandbox)',
    )
    .option(
      '--auto-approve',
      'OAuth consent approves by itself and redirects straight back (scripted demos, tests)',
    )
    .option(
      '--admin-token <token>',
      "fix the x-admin-token of the admin API: '-' reads it from standard input (default: EBS_SANDBOX_ADMIN_TOKEN, else random; a token typed here shows in ps)",
    )
    .addOption(
      new Option('--leads <n>', 'generate this many leads in a new database').argParser(
        intFlag(0, 10_000_000),
      ),
    )
    .addOption(
      new Option(
        '--events <n>',
        'generate this many events in a new database (default: one per 25 leads, at most 500)',
      ).argParser(intFlag(0, 1_000_000)),
    )
    .addOption(
      new Option(
        '--seed <s>',
        'seed of the generated data: same seed, same data (default 1)',
      ).argParser(seedFlag),
    )
    .option(
      '--skew',
      'generated leads skewed as a real inbox: most from one origin and one mail provider, few with a lead type or source, Zipf-distributed names',
    )
    .addOption(
      new Option(
        '--crm <list>',
        `also serve local fakes of these CRMs, each on its own port (${CRM_FAKES.join(', ')})`,
      ).argParser(crmList),
    )
    .action(async (flags: SandboxFlags) => (await import('../sandbox.js')).sandboxCommand(flags));
}
