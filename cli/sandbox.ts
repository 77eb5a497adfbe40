import { join } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { loadConfig } from '../config/index.js';
import { isLoopbackHost } from '../config/loopback.js';
import { adminTokenProblem } from '../sandbox/auth.js';
import type { SeedSummary } from '../sandbox/seed.js';
import { CRM_FAKES, startCrmFakes, type CrmFake, type CrmFakeName } from '../sandbox/crm/fakes.js';
import { startSandbox, type SandboxOptions } from '../sandbox/server.js';
import { runAction, UserError } from './errors.js';
import { FROM_STDIN, intFlag, portFlag, secretFrom } from './options.js';

interface SandboxFlags {
  port: number;
  host: string;
  allowRemote?: boolean;
  db?: string;
  http?: boolean;
  apiKey?: string;
  rateLimit: number;
  rateLimitMode: '429' | '403';
  reachLimit: number;
  maxPer: number;
  tokenTtl: number;
  certDir?: string;
  autoApprove?: boolean;
  adminToken?: string;
  leads?: number;
  events?: number;
  seed?: string;
  skew?: boolean;
  crm?: CrmFakeName[];
}

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

function seedLine(seeded: SeedSummary): string {
  const n = (count: number) => count.toLocaleString('en-US');
  const parts = [
    `${n(seeded.leads)} leads (${n(seeded.leadBookings)} lead bookings)`,
    `${n(seeded.events)} events`,
    `${n(seeded.appointments)} appointments`,
    `${n(seeded.expenses)} expenses`,
    `${n(seeded.eventNotes)} notes`,
    `${n(seeded.questionnaires)} questionnaires`,
  ];
  return `  data      ${parts.join(', ')}: ${n(seeded.records)} records in ${(seeded.ms / 1000).toFixed(1)} s (seed ${JSON.stringify(seeded.seed)})`;
}

/** The sandbox's defaults for the settings ebsync must be told of when they differ. */
const SANDBOX_DEFAULTS = { reachLimit: 10_000, maxPer: 100, rateLimit: 0 } as const;

/**
 * The environment that points ebsync at a running sandbox: its addresses and key, and every
 * limit set unlike the defaults (the reach, the largest page, the rate), so the export line
 * is right whatever flags the sandbox was started with.
 */
export function sandboxEnvironment(
  sandbox: { baseUrl: string; authUrl: string; apiKey: string; caFile?: string | undefined },
  limits: { reachLimit: number; maxPer: number; rateLimit: number },
): [string, string][] {
  const env: [string, string][] = [
    ['EBS_BASE_URL', sandbox.baseUrl],
    ['EBS_AUTH_URL', sandbox.authUrl],
    ['EBS_API_KEY', sandbox.apiKey],
    sandbox.caFile ? ['EBS_CA_FILE', sandbox.caFile] : ['EBS_ALLOW_HTTP', 'true'],
  ];
  if (limits.reachLimit !== SANDBOX_DEFAULTS.reachLimit) {
    env.push(['EBS_REACH_LIMIT', String(limits.reachLimit)]);
  }
  if (limits.maxPer !== SANDBOX_DEFAULTS.maxPer) env.push(['EBS_PAGE_SIZE', String(limits.maxPer)]);
  if (limits.rateLimit !== SANDBOX_DEFAULTS.rateLimit) {
    env.push(['EBS_RATE_LIMIT', String(limits.rateLimit)]);
  }
  return env;
}

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
    .action((flags: SandboxFlags) =>
      runAction(async () => {
        const config = loadConfig();
        if (flags.apiKey === FROM_STDIN && flags.adminToken === FROM_STDIN) {
          throw new UserError(
            '--api-key - and --admin-token - would both read standard input: give one of them by its setting (EBS_SANDBOX_API_KEY, EBS_SANDBOX_ADMIN_TOKEN)',
            2,
          );
        }
        const apiKey = await secretFrom(
          flags.apiKey,
          config.sandbox.apiKey,
          { flag: '--api-key', env: 'EBS_SANDBOX_API_KEY', what: 'integration key' },
          (key) =>
            /^ik_[A-Za-z0-9_-]{8,}$/.test(key)
              ? undefined
              : "expected 'ik_' followed by at least 8 letters, digits, _ or -",
        );
        const adminToken = await secretFrom(
          flags.adminToken,
          config.sandbox.adminToken,
          { flag: '--admin-token', env: 'EBS_SANDBOX_ADMIN_TOKEN', what: 'admin token' },
          adminTokenProblem,
        );
        const remote = !isLoopbackHost(flags.host);
        if (remote && !flags.allowRemote) {
          throw new UserError(
            `--host ${flags.host} is not a loopback address: the sandbox's OAuth consent authenticates nobody, so it listens on loopback (127.0.0.1, ::1, localhost) unless --allow-remote is given`,
            2,
          );
        }
        const options: SandboxOptions = {
          port: flags.port,
          host: flags.host,
          allowRemote: remote,
          http: flags.http ?? false,
          rateLimit: flags.rateLimit,
          rateLimitMode: flags.rateLimitMode,
          reachLimit: flags.reachLimit,
          maxPer: flags.maxPer,
          accessTokenTtlSeconds: flags.tokenTtl,
          certDir: flags.certDir ?? join(config.dataDir, 'sandbox'),
          ...(flags.db ? { db: flags.db } : {}),
          ...(apiKey ? { apiKey } : {}),
          ...(flags.autoApprove ? { autoApprove: true } : {}),
          ...(adminToken ? { adminToken } : {}),
        };
        const seeding =
          flags.leads !== undefined ||
          flags.events !== undefined ||
          flags.seed !== undefined ||
          flags.skew === true;
        if (seeding) {
          options.seed = {
            ...(flags.leads !== undefined ? { leads: flags.leads } : {}),
            ...(flags.events !== undefined ? { events: flags.events } : {}),
            ...(flags.seed !== undefined ? { seed: flags.seed } : {}),
            ...(flags.skew ? { skew: true } : {}),
            onProgress: (p) =>
              process.stderr.write(
                `generating data: ${p.records.toLocaleString('en-US')} records (${p.leads.toLocaleString('en-US')} of ${p.totalLeads.toLocaleString('en-US')} leads)\n`,
              ),
          };
        }
        let sandbox;
        try {
          sandbox = await startSandbox(options);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === 'EADDRINUSE') {
            throw new UserError(
              `port ${flags.port} on ${flags.host} is already in use; choose another with --port`,
            );
          }
          throw new UserError((error as Error).message);
        }
        let fakes: CrmFake[] = [];
        try {
          fakes = await startCrmFakes(flags.crm ?? [], {
            host: flags.host,
            adminToken: sandbox.adminToken,
          });
        } catch (error) {
          await sandbox.close();
          throw new UserError(`a CRM fake could not start: ${(error as Error).message}`);
        }
        const lines = [
          'Event Business Service sandbox ready',
          `  base URL  ${sandbox.baseUrl}`,
          `  auth URL  ${sandbox.authUrl}`,
          `  API key   ${sandbox.apiKey}   (full permissions, business ${sandbox.businessId})`,
        ];
        if (sandbox.caFile) lines.push(`  CA file   ${sandbox.caFile}`);
        if (sandbox.seeded) lines.push(seedLine(sandbox.seeded));
        else if (seeding) {
          lines.push(
            `  data      ${flags.db ?? 'the database'} already holds data; --leads/--events/--seed/--skew ignored`,
          );
        }
        lines.push(
          `  admin     ${sandbox.url}/admin  (header x-admin-token: ${sandbox.adminToken})`,
        );
        if (flags.autoApprove) {
          lines.push('  OAuth     consent approves by itself (--auto-approve): no approve page');
        }
        for (const fake of fakes) {
          lines.push(
            `  ${fake.name.padEnd(9)} ${fake.baseUrl}  (token ${fake.token}; admin ${fake.baseUrl}/_admin, same x-admin-token)`,
          );
        }
        lines.push(
          '',
          'Point ebsync at it:',
          `  export ${sandboxEnvironment(sandbox, flags)
            .map(([name, value]) => `${name}=${value}`)
            .join(' ')}`,
          ...fakes.map(
            (fake) =>
              `  export ${Object.entries(fake.settings)
                .map(([name, value]) => `${name}=${value}`)
                .join(' ')}`,
          ),
          'Stop: Ctrl-C',
        );
        // Listening for the stop signals before saying "ready": a script that stops the
        // sandbox as soon as it reads the ready lines must get a clean shutdown.
        const stopped = new Promise<void>((resolve) => {
          const stop = (): void => {
            void Promise.allSettled([sandbox.close(), ...fakes.map((f) => f.close())]).then(() =>
              resolve(),
            );
          };
          process.once('SIGINT', stop);
          process.once('SIGTERM', stop);
        });
        if (remote) {
          process.stderr.write(
            `ebsync: warning: the sandbox is reachable beyond this machine on ${flags.host}; its OAuth consent authenticates nobody (whoever reaches it approves installs), and the admin token is its only guard: use a trusted network only\n`,
          );
        }
        process.stdout.write(`${lines.join('\n')}\n`);
        await stopped;
      }),
    );
}
