import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDestination, mirrorRun, requireConnection } from '../../cli/sync.js';
import { loadConfig } from '../../config/index.js';
import { connectClient } from '../../worker/temporal-client.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import {
  connectionWorkflowId,
  credentialsRejectedUpdate,
} from '../../workflows/connection-types.js';
import { CliProcess, runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';
import { closedPort } from '../helpers/ports.js';
import { createTestDatabase } from '../helpers/postgres.js';

/**
 * `ebsync sync` asked for what can never make progress (a connection that does not exist, a
 * destination nothing answers at) says so in one line and starts nothing, instead of showing
 * "0 read" forever; a mirror started anyway (as a schedule starts it) fails for good when its
 * connection is gone, and one that keeps retrying its destination says so in `ebsync sync` and
 * is a problem in `ebsync status`.
 */
let stack: CliStack;
let env: Record<string, string>;
let client: Client;
let closeClient: () => Promise<void>;
let deadPort: number;
/** A Postgres URL nothing answers at; each test its own database name, so its own mirror. */
const deadUrl = (db: string): string => `postgres://ebsync:s3cret-pw@127.0.0.1:${deadPort}/${db}`;
const CONNECTION = 'refused';

beforeAll(async () => {
  stack = await startCliStack({
    name: 'sync-refused',
    sandbox: { seed: { leads: 20, events: 0 } },
    connect: CONNECTION,
  });
  env = stack.env;
  // The worker made the development key in the data dir: this client seals payloads with it.
  ({ client, close: closeClient } = await connectClient(
    loadConfig({ ...env, PATH: process.env.PATH ?? '' }),
  ));
  deadPort = await closedPort();
}, 180_000);

afterAll(async () => {
  await closeClient?.();
  await stack?.close();
});

/** The mirrors of this stack's task queue that Temporal knows, by workflow id. */
async function mirrorIds(): Promise<string[]> {
  const ids: string[] = [];
  for await (const run of client.workflow.list({
    query: `WorkflowType = 'mirrorWorkflow' AND TaskQueue = '${env.TEMPORAL_TASK_QUEUE}'`,
  })) {
    ids.push(run.workflowId);
  }
  return ids;
}

/** The workflow id of `ebsync sync leads --to <to>` (an absolute path, or a URL) of CONNECTION. */
const mirrorOf = (to: string): string =>
  mirrorRun(CONNECTION, { subjects: ['leads'], destination: to, full: false }).workflowId;

/** A mirror pass started as a schedule starts one: no check of the CLI's before it. */
function startMirror(connectionId: string, destination: string) {
  const { workflowId, input } = mirrorRun(connectionId, {
    subjects: ['leads'],
    destination,
    full: false,
  });
  return client.workflow.start(mirrorWorkflow, {
    taskQueue: env.TEMPORAL_TASK_QUEUE!,
    workflowId,
    args: [input],
  });
}

/**
 * `ebsync sync leads --to <to>` refused: exit 1, one line on stderr, within `withinMs`, and no
 * mirror started. Resolves with everything it printed.
 */
async function refused(to: string, withinMs: number): Promise<{ line: string; output: string }> {
  const started = Date.now();
  const sync = await runCli(
    ['sync', 'leads', '--connection', CONNECTION, '--to', to],
    env,
    withinMs,
  );
  expect(sync.code, sync.stderr).toBe(1);
  const lines = sync.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(Date.now() - started).toBeLessThan(withinMs);
  expect(await mirrorIds()).not.toContain(mirrorOf(to));
  return { line: lines[0]!, output: sync.stderr + sync.stdout };
}

describe('ebsync sync refuses what could never make progress', () => {
  it('a connection that does not exist: one line, exit 1, no mirror started', async () => {
    const sync = await runCli(['sync', '--connection', 'nope'], env, 20_000);
    expect(sync.code, sync.stderr).toBe(1);
    expect(sync.stderr).toBe(
      "ebsync: no connection named 'nope': 'ebsync connect --name nope' connects it\n",
    );
    expect(sync.stdout).toBe('');
    expect((await mirrorIds()).filter((id) => id.startsWith('mirror-nope-'))).toEqual([]);
    // A name `ebsync connect` gives no connection is not advised as one to connect.
    const reserved = await runCli(['sync', '--connection', 'pause'], env, 20_000);
    expect(reserved.code, reserved.stderr).toBe(1);
    expect(reserved.stderr).toBe(
      "ebsync: no connection named 'pause': 'ebsync connect' gives no connection that name ('ebsync connections pause' is a command): connect under another --name\n",
    );
  }, 40_000);

  it('a connection that needs re-authorization: one line saying what to run, exit 1, no mirror started', async () => {
    // A key of its own, refused as a sync's activity reports a 401 (the workflow then marks
    // the connection needs_reauth): the other tests' connection keeps working.
    const { key } = stack.sb.admin.createKey({ name: 'reauth' });
    const connected = await runCli(['connect', '--api-key', '--name', 'reauth'], {
      ...env,
      EBS_API_KEY: key,
    });
    expect(connected.code, connected.stderr).toBe(0);
    const status = await client.workflow
      .getHandle(connectionWorkflowId('reauth'))
      .executeUpdate(credentialsRejectedUpdate, { args: [{ rejected: key }] });
    expect(status.state).toBe('needs_reauth');
    const sync = await runCli(['sync', '--connection', 'reauth'], env, 30_000);
    expect(sync.code, sync.stderr).toBe(1);
    expect(sync.stderr).toBe(
      "ebsync: connection 'reauth' needs re-authorization (the service refused the integration key (401)); nothing was started: run 'ebsync connect --api-key --name reauth'\n",
    );
    expect((await mirrorIds()).filter((id) => id.startsWith('mirror-reauth-'))).toEqual([]);
  }, 60_000);

  it('ebsync connections says what to run for a connection that needs re-authorization', async () => {
    // The listing is where a user looks first: the state and the refusal alone left them to
    // guess the command (and `ebsync connect` without --name connects another, 'default').
    const { key } = stack.sb.admin.createKey({ name: 'reauth-list' });
    const connected = await runCli(['connect', '--api-key', '--name', 'reauth-list'], {
      ...env,
      EBS_API_KEY: key,
    });
    expect(connected.code, connected.stderr).toBe(0);
    const status = await client.workflow
      .getHandle(connectionWorkflowId('reauth-list'))
      .executeUpdate(credentialsRejectedUpdate, { args: [{ rejected: key }] });
    expect(status.state).toBe('needs_reauth');
    const fix = "run 'ebsync connect --api-key --name reauth-list'";

    const listed = await runCli(['connections'], env, 30_000);
    expect(listed.code, listed.stderr).toBe(0);
    const line = listed.stdout.split('\n').find((l) => l.startsWith('reauth-list '));
    expect(line).toMatch(/^reauth-list +needs_reauth +integration_key /);
    expect(line).toContain(`last error: the service refused the integration key (401); ${fix}`);
    // An active connection's line has no such advice.
    expect(listed.stdout).toMatch(new RegExp(`^${CONNECTION} +active +[^\\n]*$`, 'm'));
    // Advice on every needs_reauth line (another test's connection may be one), on no other.
    for (const l of listed.stdout.trimEnd().split('\n')) {
      expect(l.includes("; run 'ebsync connect"), l).toBe(/^\S+ +needs_reauth /.test(l));
    }

    const shown = await runCli(['connections', 'reauth-list'], env, 30_000);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^to fix +${fix}$`, 'm'));
    const active = await runCli(['connections', CONNECTION], env, 30_000);
    expect(active.stdout).not.toContain('to fix');

    // The worker's one warning line says the same: its syncs fail (they are not "paused",
    // a state of its own that waits) until that very command runs.
    const warning = stack.worker.stdout
      .split('\n')
      .filter((l) => l.includes('"connectionId":"reauth-list"'))
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((entry) => entry.level === 40);
    expect(warning.map((entry) => entry.msg)).toEqual([
      `connection reauth-list needs re-authorization (the service refused the integration key (401)): its syncs fail until '${fix.slice(5, -1)}' gives it new credentials`,
    ]);
  }, 60_000);

  it('a pass that fails on a key revoked at the service says what to run to reconnect', async () => {
    const { key, id } = stack.sb.admin.createKey({ name: 'sync-revoked' });
    const connected = await runCli(['connect', '--api-key', '--name', 'sync-revoked'], {
      ...env,
      EBS_API_KEY: key,
    });
    expect(connected.code, connected.stderr).toBe(0);
    stack.sb.admin.revokeKey(id);
    const sync = await runCli(
      [
        'sync',
        'leads',
        '--connection',
        'sync-revoked',
        '--to',
        `sqlite:${join(env.EBSYNC_DATA_DIR!, 'sync-revoked.db')}`,
      ],
      env,
      60_000,
    );
    expect(sync.code, sync.stderr).toBe(1);
    // The first activity to meet the 401 or the verdict it left, whichever fails the pass.
    expect(sync.stdout).toMatch(/: failed.*\n[\s\S]*error {8}.*(401|needs_reauth)/);
    expect(sync.stderr).toMatch(
      /\nebsync: connection 'sync-revoked' needs re-authorization \(.*\): run 'ebsync connect --api-key --name sync-revoked'\n$/,
    );
    // What it says to run works: a new key, and the connection is active again.
    const fresh = stack.sb.admin.createKey({ name: 'revoked-2' });
    const again = await runCli(['connect', '--api-key', '--name', 'sync-revoked'], {
      ...env,
      EBS_API_KEY: fresh.key,
    });
    expect(again.code, again.stderr).toBe(0);
    const listed = await runCli(['connections'], env);
    expect(listed.stdout).toMatch(/^sync-revoked +active/m);
  }, 120_000);

  it('a name no connection could have: the rule, exit 2, not to connect it under that name', async () => {
    // The check every command's connection goes through (`--connection` itself is refused
    // by its flag's parser, test/cli/cli.test.ts).
    const refusal = await requireConnection(client, 'BAD!').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toMatchObject({
      exitCode: 2,
      message:
        "connection 'BAD!' is not allowed: expected 1-63 lowercase letters, digits, '-' or '_', the first a letter or digit",
    });
  });

  it('a destination that cannot be opened: one line naming it, password masked, exit 1', async () => {
    const to = deadUrl('crm');
    const masked = to.replace('ebsync:s3cret-pw@', '***@');
    const { line, output } = await refused(to, 30_000);
    expect(line).toContain(`cannot open destination ${masked}: `);
    expect(line).toContain('ECONNREFUSED');
    expect(output).not.toContain('s3cret-pw');
  }, 40_000);
});

describe('a credential that may not read every subject', () => {
  it('mirrors what it may read, leaves the rest unread and undeleted, exits 3 and says why', async () => {
    const name = 'sync-narrow';
    const file = join(env.EBSYNC_DATA_DIR!, 'sync-narrow.db');
    const sync = (): Promise<{ code: number | null; stdout: string; stderr: string }> =>
      runCli(
        ['sync', 'all', '--full', '--connection', name, '--to', `sqlite:${file}`],
        env,
        60_000,
      );
    const connect = async (key: string): Promise<void> => {
      const connected = await runCli(['connect', '--api-key', '--name', name], {
        ...env,
        EBS_API_KEY: key,
      });
      expect(connected.code, connected.stderr).toBe(0);
    };
    /** Rows of a table, and those marked deleted. */
    const rows = (table: string): { all: number; deleted: number } => {
      const db = new Database(file, { readonly: true });
      try {
        return db
          .prepare(`SELECT count(*) AS "all", count(deleted_at) AS deleted FROM ${table}`)
          .get() as { all: number; deleted: number };
      } finally {
        db.close();
      }
    };
    const everything = stack.sb.admin.createKey({ name: 'narrow-full' });
    await connect(everything.key);
    const first = await sync();
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const appointments = rows('appointments');
    expect(appointments.all).toBeGreaterThan(0);
    expect(rows('leads')).toEqual({ all: 20, deleted: 0 });

    // The same connection, now with a key that may read leads only; a lead and an appointment
    // deleted at the service meanwhile.
    const db = new Database(file, { readonly: true });
    const [lead, appointment] = ['leads', 'appointments'].map(
      (table) => (db.prepare(`SELECT id FROM ${table} LIMIT 1`).get() as { id: string }).id,
    );
    db.close();
    stack.sb.admin.deleteRecord('lead', Number(lead));
    stack.sb.admin.deleteRecord('appointment', Number(appointment));
    await connect(
      stack.sb.admin.createKey({ name: 'narrow-leads', permissions: ['lead_read'] }).key,
    );
    const narrow = await sync();
    expect(narrow.code, narrow.stdout + narrow.stderr).toBe(3);
    expect(narrow.stdout).toMatch(/: incomplete\n/);
    expect(narrow.stdout).toMatch(
      /\n {2}not read {5}2 lists the connection's credential may not read, left unread \(none of their records marked deleted\); give the connection a credential that may, then run this sync again:\n/,
    );
    expect(narrow.stdout).toMatch(
      /\n {15}events \(event_bookings\): eventBookings\.list: HTTP 403 .*event_read/,
    );
    expect(narrow.stdout).toMatch(
      /\n {15}appointments: appointments\.list: HTTP 403 .*appointment_read/,
    );
    // The lead it may read is marked deleted; the appointment it may not read stays.
    expect(rows('leads')).toEqual({ all: 20, deleted: 1 });
    expect(rows('appointments')).toEqual(appointments);
    const status = await runCli(['status'], env);
    expect(status.stdout).toMatch(
      /last pass incomplete: 2 lists its credential may not read \(events \(event_bookings\), appointments\)/,
    );
    expect(status.stdout).toMatch(/\n {12}not read: appointments: appointments\.list: HTTP 403/);

    // Given a key that may read them again, the next pass reads them, and marks the deleted one.
    await connect(stack.sb.admin.createKey({ name: 'narrow-again' }).key);
    const again = await sync();
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).not.toMatch(/not read/);
    expect(rows('appointments')).toEqual({ all: appointments.all, deleted: 1 });
  }, 240_000);
});

describe('the destination check on a real Postgres', () => {
  it('a URL without the password the server asks for says so, not the SCRAM words of the driver', async () => {
    const url = new URL(await createTestDatabase('nopw'));
    url.password = '';
    const refusal = await checkDestination(url.href).then(
      () => undefined,
      (error: unknown) => (error as Error).message,
    );
    expect(refusal).toBe(
      `cannot open destination ${url.href.replace('postgres@', '***@')}: the server asks for a password and the URL has none: ` +
        'add it to the URL (user:password before the @); nothing was started ' +
        '(opened from this machine: --no-check-destination skips the check)',
    );
  });
});

describe('ebsync sync --no-check-destination', () => {
  it('starts the pass without opening the database from here: the workers may reach it', async () => {
    const to = deadUrl('unchecked');
    const sync = new CliProcess(
      ['sync', 'leads', '--connection', CONNECTION, '--to', to, '--no-check-destination'],
      env,
    );
    try {
      const deadline = Date.now() + 20_000;
      while (
        !/^started the mirror \(/m.test(sync.stderr) &&
        Date.now() < deadline &&
        sync.running
      ) {
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(sync.stderr).toMatch(/^started the mirror \(mirror-refused-[0-9a-f]{12}\)$/m);
      expect(sync.stderr).not.toContain('cannot open destination');
      // The same database written another way (another login, a TLS parameter) is the same
      // destination: its pass is this one, not a second racing it for the same tables.
      const sameDatabase = `${to.replace('ebsync:s3cret-pw@', 'other:pw@')}?sslmode=disable`;
      const status = await runCli(
        ['sync', 'leads', '--status', '--json', '--connection', CONNECTION, '--to', sameDatabase],
        env,
      );
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ status: 'RUNNING' });
    } finally {
      sync.killAll();
      await sync.exited;
      await client.workflow.getHandle(mirrorOf(to)).terminate('test over');
    }
  }, 40_000);
});

describe('ebsync sync refuses an SQLite destination whose folder cannot be made', () => {
  function fileInTheWay(): string {
    const file = join(stack.dir, 'a-file');
    writeFileSync(file, 'not a folder\n');
    return file;
  }
  function readOnlyFolder(): string {
    const folder = join(stack.dir, 'read-only');
    mkdirSync(folder, { mode: 0o500 });
    return folder;
  }
  /** Each path with what the line says of it. */
  const cases: [string, () => string, RegExp][] = [
    // mkdir answers ENOENT there, under a folder that exists: Node's recursive mkdir hung.
    ['under /proc', () => '/proc/ebsync-nope/x/mirror.db', /its file system does not allow it/],
    ['through a regular file', () => `${fileInTheWay()}/x/mirror.db`, /a file is in its way/],
    // sysfs refuses every mkdir (EPERM), root's too.
    ['in a folder nobody may write', () => '/sys/ebsync-nope/mirror.db', /not allowed here/],
    // Root writes into a read-only folder anyway: the case holds for everyone else.
    ...(process.getuid?.() === 0
      ? []
      : [
          [
            'in a read-only folder',
            () => `${readOnlyFolder()}/sub/mirror.db`,
            /not allowed here \(EACCES\)/,
          ] as [string, () => string, RegExp],
        ]),
  ];

  it.each(cases)(
    '%s: one line naming it and why, exit 1, at once',
    async (_, path, why) => {
      const to = `sqlite:${path()}`;
      const { line } = await refused(to, 15_000);
      expect(line).toMatch(/^ebsync: cannot open destination sqlite:\//);
      expect(line).toContain(to);
      expect(line).toMatch(why);
      expect(line).toMatch(
        /; nothing was started \(opened from this machine: --no-check-destination skips the check\)$/,
      );
    },
    30_000,
  );
});

describe('checking an SQLite destination leaves nothing behind', () => {
  it('a file that can be made is made and removed again, with the folders made for it', async () => {
    const base = join(stack.dir, 'checked');
    mkdirSync(base);
    await checkDestination(`sqlite:${join(base, 'new', 'deeper', 'mirror.db')}`);
    expect(readdirSync(base)).toEqual([]);
  });

  it('a database that exists stays, and still opens', async () => {
    const file = join(stack.dir, 'kept.db');
    const db = new Database(file);
    db.exec('CREATE TABLE kept (id INTEGER)');
    db.close();
    await checkDestination(`sqlite:${file}`);
    const again = new Database(file, { readonly: true });
    expect(
      again.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(),
    ).toEqual(['kept']);
    again.close();
  });
});

describe('a running mirror that cannot go on', () => {
  it('fails for good, with a typed non-retryable error, when its connection does not exist', async () => {
    const handle = await startMirror('gone', `sqlite:${stack.dir}/gone.db`);
    const failure = await handle.result().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    // MirrorPassFailed ← the activity's failure ← ConnectionNotFoundError, not retried.
    const activity = (failure as WorkflowFailedError).cause?.cause;
    expect(activity).toBeInstanceOf(ActivityFailure);
    const cause = (activity as ActivityFailure).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause).toMatchObject({ type: 'ConnectionNotFoundError', nonRetryable: true });
    expect(cause?.message).toContain("no connection named 'gone'");
  }, 45_000);

  it('says it is retrying its destination in ebsync sync, and ebsync status counts it a problem', async () => {
    const to = deadUrl('away');
    const masked = to.replace('ebsync:s3cret-pw@', '***@');
    const handle = await startMirror(CONNECTION, to);
    try {
      // Attached (a mirror is running): no check stops it; its progress line says why it waits.
      const sync = new CliProcess(['sync', 'leads', '--connection', CONNECTION, '--to', to], env);
      try {
        const deadline = Date.now() + 20_000;
        while (!/retrying: /.test(sync.stderr) && Date.now() < deadline && sync.running) {
          await new Promise((r) => setTimeout(r, 250));
        }
        expect(sync.stderr).toMatch(
          new RegExp(
            `^planning: .*; retrying: destination ${masked.replace(/[.*?/]/g, '\\$&')} unreachable \\(connect ECONNREFUSED .*\\), attempt \\d+$`,
            'm',
          ),
        );
      } finally {
        // Not Ctrl-C: a detached sync exits only when its long poll of the result returns.
        sync.killAll();
        await sync.exited;
      }

      const shown = await runCli(
        ['sync', 'leads', '--status', '--json', '--connection', CONNECTION, '--to', to],
        env,
      );
      expect(shown.code, shown.stderr).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({
        status: 'RUNNING',
        destination: masked,
        retrying: { activity: 'planMirrorPass', type: 'DestinationUnavailableError' },
      });
      expect(shown.stdout).not.toContain('s3cret-pw');

      // Four failures in a row (1 + 2 + 4 + 8 s of backoff) make it a problem, not before.
      let status = await runCli(['status', '--json'], env);
      const kinds = (): string[] =>
        (JSON.parse(status.stdout) as { problems: { kind: string }[] }).problems.map((p) => p.kind);
      const deadline = Date.now() + 30_000;
      while (!kinds().includes('pass_retrying') && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 1_000));
        status = await runCli(['status', '--json'], env);
      }
      expect(status.code, status.stderr).toBe(1);
      expect(kinds()).toContain('pass_retrying');
      expect(status.stderr).toMatch(
        new RegExp(
          `^ebsync: mirror of connection ${CONNECTION} into ${masked.replace(/[.*?/]/g, '\\$&')}: retrying: destination ${masked.replace(/[.*?/]/g, '\\$&')} unreachable \\(connect ECONNREFUSED .*\\), attempt [5-9]`,
          'm',
        ),
      );
      expect(status.stdout + status.stderr).not.toContain('s3cret-pw');
    } finally {
      await handle.terminate('test over');
    }
  }, 60_000);
});

describe('ebsync sync --forget', () => {
  it('--status of a mirror that never ran names the command that starts it, --to and all', async () => {
    const status = await runCli(
      ['sync', '--connection', CONNECTION, '--to', 'hubspot', '--status'],
      env,
    );
    expect(status.code).toBe(1);
    expect(status.stderr).toBe(
      `ebsync: no mirror of connection ${CONNECTION} into hubspot yet: start one with 'ebsync sync --connection ${CONNECTION} --to hubspot'\n`,
    );
    // Into Postgres: the command that starts it asks for the login, never shows one.
    const pg = await runCli(
      [
        'sync',
        '--connection',
        CONNECTION,
        '--to',
        'postgres://ebs:s3cret-pw@127.0.0.1:1/mirror',
        '--status',
      ],
      env,
    );
    expect(pg.code).toBe(1);
    expect(pg.stderr).toBe(
      `ebsync: no mirror of connection ${CONNECTION} into postgres://***@127.0.0.1:1/mirror yet: start one with 'ebsync sync --connection ${CONNECTION} --to postgres://USER:PASSWORD@127.0.0.1:1/mirror'\n`,
    );
  });

  it("deletes a mirror's ended passes, not a running one, and ebsync status stops reporting it", async () => {
    const to = deadUrl('mistyped');
    const masked = to.replace('ebsync:s3cret-pw@', '***@');
    const args = ['sync', 'leads', '--connection', CONNECTION, '--to', to];
    const handle = await startMirror(CONNECTION, to);
    // Running: refused, nothing deleted.
    const running = await runCli([...args, '--forget'], env);
    expect(running.code, running.stderr).toBe(1);
    expect(running.stderr).toBe(
      `ebsync: the mirror of connection ${CONNECTION} into ${masked} is running: 'ebsync sync --cancel' (with the same --connection and --to) stops it, then --forget forgets it; nothing was deleted\n`,
    );
    expect(await mirrorIds()).toContain(mirrorOf(to));

    // Ended (as a failed pass into a mistyped destination ends): a problem of ebsync status.
    await handle.terminate('wrong destination');
    // Status reads Temporal's list, which shows the ended pass a moment later.
    const problem = `into ${masked}: last pass terminated`;
    let before = await runCli(['status'], env);
    for (const until = Date.now() + 15_000; !before.stdout.includes(problem);) {
      if (Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 500));
      before = await runCli(['status'], env);
    }
    expect(before.code).toBe(1);
    expect(before.stdout).toContain(problem);

    const forgot = await runCli([...args, '--forget'], env, 60_000);
    expect(forgot.code, forgot.stderr).toBe(0);
    // Temporal deletes in the background, later on a busy server: the line says which. The
    // pass claimed the destination in the ledger if its first step got that far before the
    // termination (timing): the line says which of that too.
    expect(forgot.stdout).toMatch(
      new RegExp(
        `^forgot the mirror of connection ${CONNECTION} into ${masked.replace(/[.*?/]/g, '\\$&')}: (1 run deleted from Temporal, so 'ebsync status' no longer shows it|Temporal is deleting 1 run in the background \\(usually seconds, longer on a busy server\\), and 'ebsync status' stops showing it once done); the ledger (forgot what it held of it there \\(no record written\\), so another connection may now mirror into it|held nothing of it there)\n$`,
      ),
    );
    let after = await runCli(['status'], env);
    for (const until = Date.now() + 90_000; (after.stdout + after.stderr).includes(masked);) {
      if (Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 500));
      after = await runCli(['status'], env);
    }
    expect(after.stdout + after.stderr).not.toContain(masked);
    expect(await mirrorIds()).not.toContain(mirrorOf(to));
    expect(forgot.stdout + forgot.stderr + after.stdout + after.stderr).not.toContain('s3cret-pw');

    // Again: nothing left, said so, exit 0; with a flag of another action, bad input.
    const again = await runCli([...args, '--forget'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(
      `no mirror of connection ${CONNECTION} into ${masked}: nothing to forget (no connection writes it)\n`,
    );
    const mixed = await runCli([...args, '--forget', '--full'], env);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toBe(
      "ebsync: --forget deletes a mirror's ended passes and does not go with --full\n",
    );
  }, 200_000);
});
