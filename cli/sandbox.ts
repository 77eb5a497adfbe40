import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { counted } from './counted.js';
import { loadStartupConfig } from './startup-config.js';
import { isLoopbackHost } from '../config/loopback.js';
import { adminTokenProblem } from '../sandbox/auth.js';
import type { SeedSummary } from '../sandbox/seed.js';
import { startCrmFakes, type CrmFake } from '../sandbox/crm/fakes.js';
import type { CrmFakeName } from '../sandbox/crm/names.js';
import { PERMISSIONS } from '../sandbox/permissions.js';
import { startSandbox, type SandboxOptions } from '../sandbox/server.js';
import { SANDBOX_DEFAULTS } from './commands/sandbox.js';
import { UserError } from './errors.js';
import { listenRefusal } from './network-refusals.js';
import { makeDataDir, makePrivateDir } from '../store/private-files.js';
import { FROM_STDIN, secretFrom } from './secret-input.js';
import { stopSignal } from './stop-signals.js';
import { runUntilStopped } from './stopped-exit.js';
import { shownSafely } from './shown-text.js';
import { scrubLogText } from '../worker/redact.js';

/**
 * One line for an error the sandbox answered 500: the route and the error's own words, scrubbed
 * of credential shapes and control characters (its stack with EBSYNC_DEBUG=1).
 */
export function internalErrorLine(error: unknown, route: string): string {
  const text =
    error instanceof Error
      ? process.env.EBSYNC_DEBUG === '1' && error.stack
        ? error.stack
        : `${error.name}: ${error.message}`
      : String(error);
  return shownSafely(
    scrubLogText(`ebsync sandbox: internal error answering ${route} (500): ${text}`),
  );
}

/** The folder of --db when it does not exist (SQLite's driver refuses it without a code). */
function missingFolder(path: string): string | null {
  const folder = dirname(path);
  return statSync(folder, { throwIfNoEntry: false }) === undefined ? folder : null;
}

/** Why the SQLite file of --db could not be used, with what the flag takes. */
function dbRefusal(path: string, code: string | undefined): string {
  const folder = missingFolder(path);
  const why = folder
    ? `its folder ${folder} does not exist`
    : statSync(path, { throwIfNoEntry: false })?.isDirectory()
      ? 'it is a directory'
      : code === 'SQLITE_NOTADB'
        ? 'the file is not an SQLite database'
        : code === 'SQLITE_CANTOPEN'
          ? 'it cannot be opened or made there (no such folder, or no permission)'
          : `SQLite refused it (${code})`;
  return `--db '${path}' cannot be used: ${why}; expected an SQLite file the sandbox may read and write (made if missing), or no --db for an in-memory database`;
}

export interface SandboxFlags {
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

function seedLine(seeded: SeedSummary): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const count = (value: number, noun: string): string => counted(value, noun, n);
  const parts = [
    `${count(seeded.leads, 'lead')} (${count(seeded.leadBookings, 'lead booking')})`,
    count(seeded.events, 'event'),
    count(seeded.appointments, 'appointment'),
    count(seeded.expenses, 'expense'),
    count(seeded.eventNotes, 'note'),
    count(seeded.questionnaires, 'questionnaire'),
  ];
  // The API does not list soft-deleted records: counted apart, so the banner matches a mirror.
  if (seeded.deleted > 0)
    parts.push(`and ${n(seeded.deleted)} deleted ones the API no longer lists`);
  // The total is every row seeded: event bookings, the catalog and the deleted ones too.
  return `  data      ${parts.join(', ')}: ${n(seeded.records)} records in all (event bookings and the catalog included) in ${(seeded.ms / 1000).toFixed(1)} s (seed ${JSON.stringify(seeded.seed)})`;
}

/**
 * The environment that points ebsync at a running sandbox: its addresses and key, and every
 * limit set unlike the defaults (the reach, the largest page, the rate), so the export line
 * is right whatever flags the sandbox was started with.
 */
export function sandboxEnvironment(
  sandbox: { baseUrl: string; authUrl: string; apiKey: string; caFile?: string | undefined },
  limits: { reachLimit: number; maxPer: number; rateLimit: number },
  clientId?: string,
): [string, string][] {
  const env: [string, string][] = [
    ['EBS_BASE_URL', sandbox.baseUrl],
    ['EBS_AUTH_URL', sandbox.authUrl],
    ['EBS_API_KEY', sandbox.apiKey],
    sandbox.caFile ? ['EBS_CA_FILE', sandbox.caFile] : ['EBS_ALLOW_HTTP', 'true'],
  ];
  if (clientId !== undefined) env.push(['EBS_CLIENT_ID', clientId]);
  if (limits.reachLimit !== SANDBOX_DEFAULTS.reachLimit) {
    env.push(['EBS_REACH_LIMIT', String(limits.reachLimit)]);
  }
  if (limits.maxPer !== SANDBOX_DEFAULTS.maxPer) env.push(['EBS_PAGE_SIZE', String(limits.maxPer)]);
  if (limits.rateLimit !== SANDBOX_DEFAULTS.rateLimit) {
    env.push(['EBS_RATE_LIMIT', String(limits.rateLimit)]);
  }
  return env;
}

/** The OAuth app the sandbox command registers for ebsync itself. */
export const SANDBOX_APP_NAME = 'ebsync';
/**
 * Where `ebsync connect` listens for the consent's redirect by default. The sandbox lets a
 * loopback IP redirect use any port (RFC 8252 §7.3), so `--redirect-port` works with it too.
 */
const SANDBOX_APP_REDIRECT = 'http://127.0.0.1:8976/callback';

/**
 * The sandbox's OAuth app for ebsync, made on the first start (every permission, the loopback
 * redirect `ebsync connect` uses) and found again by name when `--db` keeps the data: without
 * one, trying the installed-app flow meant registering an app through the admin API first.
 */
function ebsyncApp(admin: {
  apps(): { name: string; client_id: string }[];
  createApp(input: {
    name: string;
    redirectUris: readonly string[];
    permissions: readonly string[];
  }): { client_id: string };
}): string {
  const known = admin.apps().find((app) => app.name === SANDBOX_APP_NAME);
  return (
    known ??
    admin.createApp({
      name: SANDBOX_APP_NAME,
      redirectUris: [SANDBOX_APP_REDIRECT],
      permissions: PERMISSIONS,
    })
  ).client_id;
}

/** `ebsync sandbox`. */
export async function sandboxCommand(flags: SandboxFlags): Promise<void> {
  await runUntilStopped(async () => {
    const config = loadStartupConfig();
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
    // ebsync's loopback rule is applied here (the sandbox may not import config/): it is told
    // whether the host is remote, and refuses a remote one unless allowRemote says so.
    const remote = !isLoopbackHost(flags.host);
    if (remote && !flags.allowRemote) {
      throw new UserError(
        `--host ${flags.host} is not a loopback address: the sandbox's OAuth consent authenticates nobody, so it listens on loopback (127.0.0.1, ::1, localhost) unless --allow-remote is given`,
        2,
      );
    }
    if (remote && flags.http) {
      throw new UserError(
        `--http is allowed on a loopback --host only (127.0.0.1, ::1, localhost), not on ${flags.host}: beyond loopback the sandbox speaks HTTPS`,
        2,
      );
    }
    // The certificate's key is kept there: the data dir and the folder are made owner-only
    // (the sandbox may not import store/, so they are made before it starts).
    const certDir = flags.certDir ?? join(config.dataDir, 'sandbox');
    if (flags.certDir === undefined) makeDataDir(config.dataDir);
    makePrivateDir(certDir);
    const options: SandboxOptions = {
      port: flags.port,
      listen: { host: flags.host, remote },
      allowRemote: remote,
      http: flags.http ?? false,
      rateLimit: flags.rateLimit,
      rateLimitMode: flags.rateLimitMode,
      reachLimit: flags.reachLimit,
      maxPer: flags.maxPer,
      accessTokenTtlSeconds: flags.tokenTtl,
      certDir,
      ...(flags.db ? { db: flags.db } : {}),
      ...(apiKey ? { apiKey } : {}),
      ...(flags.autoApprove ? { autoApprove: true } : {}),
      ...(adminToken ? { adminToken } : {}),
      // A 500 is a bug, or a --db file changed under the sandbox: say so, or nothing would.
      onInternalError: (error, route) =>
        process.stderr.write(`${internalErrorLine(error, route)}\n`),
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
      const refusal = listenRefusal(error, {
        host: flags.host,
        port: flags.port,
        hostFrom: '--host',
        portFrom: '--port',
      });
      if (refusal) throw refusal;
      const code = (error as NodeJS.ErrnoException).code;
      if (flags.db !== undefined && (code?.startsWith('SQLITE_') || missingFolder(flags.db))) {
        throw new UserError(dbRefusal(flags.db, code), 2);
      }
      throw new UserError((error as Error).message.split('\n'));
    }
    const clientId = ebsyncApp(sandbox.admin);
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
    lines.push(`  admin     ${sandbox.url}/admin  (header x-admin-token: ${sandbox.adminToken})`);
    lines.push(
      `  OAuth app ${clientId}   ('${SANDBOX_APP_NAME}', every permission; 'ebsync connect' without --api-key installs it)`,
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
      `  export ${sandboxEnvironment(sandbox, flags, clientId)
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
    const stopped = stopSignal();
    if (remote) {
      process.stderr.write(
        `ebsync: warning: the sandbox is reachable beyond this machine on ${flags.host}; its OAuth consent authenticates nobody (whoever reaches it approves installs), and the admin token is its only guard: use a trusted network only\n`,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    await stopped;
    await Promise.allSettled([sandbox.close(), ...fakes.map((f) => f.close())]);
  });
}
