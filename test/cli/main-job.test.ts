import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import Database from 'better-sqlite3';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FAIRNESS_ARGS } from '../../worker/dev-server.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { connectionWorkflowId } from '../../workflows/connection-types.js';
import { CliProcess, runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';
import { everyRoundExitsClean, ROUNDS } from '../helpers/restarts.js';

/**
 * `npm start` (ebsync dev) as a new user meets it, and `ebsync sync` as they use it next.
 * TEMPORAL_ADDRESS points at the run's dev server, so `dev` starts no server of its own.
 */
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-main-job-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function count(file: string, sql: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare(sql).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('npm start: the main job on demo data', () => {
  const env = () => ({
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: 'main-job',
    EBSYNC_DATA_DIR: join(dir, 'data'),
  });
  /** A service of the user's own, started after the demo, and its connection. */
  const OWN = 'main-job-own';
  let own: Sandbox | undefined;
  const ownEnv = () => ({
    ...env(),
    EBS_BASE_URL: own!.baseUrl,
    EBS_API_KEY: own!.apiKey,
    EBS_CA_FILE: own!.caFile ?? '',
  });
  afterAll(async () => {
    await own?.close();
  });
  /** What a start on the user's own service says of the demo's schedule it paused. */
  const DEMO_PAUSED =
    "The demo's schedule sync-demo-all-full is paused while you use your own service: its sandbox runs only under " +
    "'npm start' without EBS_BASE_URL, which resumes it; to remove it for good: 'npx ebsync schedule delete sync-demo-all-full'.\n";
  interface DemoSchedule {
    scheduleId: string;
    paused: boolean;
    note: string | null;
    mirrorWorkflowId: string;
    running: string[];
  }
  /** The demo's schedules as `ebsync schedule list` has them, sorted by id. */
  const demoSchedules = async () => {
    const listed = await runCli(['schedule', 'list', '--connection', 'demo', '--json'], env());
    expect(listed.code, listed.stderr).toBe(0);
    return (JSON.parse(listed.stdout) as DemoSchedule[]).sort((a, b) =>
      a.scheduleId.localeCompare(b.scheduleId),
    );
  };
  /** How a workflow ended, once it has (within 60 s): COMPLETED, CANCELED, FAILED…, or NOT_STARTED. */
  const closedAs = async (workflowId: string): Promise<string> => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      for (const end = Date.now() + 60_000; Date.now() < end;) {
        const described = await connection.workflowService
          .describeWorkflowExecution({ namespace: 'default', execution: { workflowId } })
          .catch((error: unknown) => {
            // gRPC NOT_FOUND: a workflow that never started.
            if ((error as { code?: number }).code === 5) return undefined;
            throw error;
          });
        if (!described) return 'NOT_STARTED';
        const info = described.workflowExecutionInfo;
        // Temporal's WorkflowExecutionStatus, by number.
        const status = ['UNSPECIFIED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELED', 'TERMINATED']
          .concat(['CONTINUED_AS_NEW', 'TIMED_OUT'])
          .at(Number(info?.status ?? 0));
        if (status !== 'RUNNING') return status ?? String(info?.status);
        await sleep(500);
      }
      return 'RUNNING';
    } finally {
      await connection.close();
    }
  };

  it('says it uses demo data, mirrors it into mirror.db with a summary, and a second start writes nothing', async () => {
    const first = new CliProcess(['dev'], env());
    let suggested: string | undefined;
    try {
      await first.waitForLine(/^The data is in /, 240_000);
      expect(first.stdout).toMatch(/SANDBOX with DEMO DATA/);
      // The status page is served beside the main job, on loopback.
      expect(first.stdout).toMatch(/^Status page: http:\/\/127\.0\.0\.1:\d+\/ /m);
      expect(first.stdout).toMatch(/EBS_BASE_URL=.* EBS_API_KEY=/);
      // The counts add up: every record read was written or found up to date, and a first
      // full pass reads each once (lead bookings come with their leads, the list is counted).
      const read = /read +(\d+) records/.exec(first.stdout);
      const written = /written +(\d+) changed or new; (\d+) already up to date/.exec(first.stdout);
      expect(Number(written?.[1]) + Number(written?.[2])).toBe(Number(read?.[1]));
      expect(first.stdout).not.toMatch(/read again/);
      suggested = /^ {2}sqlite3 \S+ "(.+)"$/m.exec(first.stdout)?.[1];
      expect(suggested).toBeDefined();
      await first.waitForLine(/^ {2}sync-demo-all-full /, 10_000);
      expect(first.stdout).toMatch(/^ {2}sync-demo-all-incremental +every 15m \(created now\)$/m);
      expect(first.stdout).toMatch(
        /^ {2}sync-demo-all-full +cron '0 3 \* \* \*' \(.+\) \(created now\)$/m,
      );
      // Still running: the main job keeps its worker until Ctrl-C.
      expect(first.running).toBe(true);
      // Ctrl-C on a terminal reaches the dev server too, at the same moment.
      const stopped = await first.interrupt(60_000);
      expect(stopped.code).toBe(0);
    } finally {
      first.killAll();
    }
    const mirror = join(dir, 'data', 'mirror.db');
    expect(count(mirror, 'SELECT count(*) AS n FROM leads')).toBeGreaterThan(1900);
    expect(count(mirror, 'SELECT count(*) AS n FROM events')).toBe(300);
    // The query the summary suggests runs against what it mirrored, and finds the leads.
    const byOrigin = new Database(mirror, { readonly: true });
    try {
      const rows = byOrigin.prepare(suggested!).all() as { n: number }[];
      expect(rows.reduce((sum, row) => sum + row.n, 0)).toBeGreaterThan(1900);
    } finally {
      byOrigin.close();
    }

    // A user's change to a default schedule is kept by the next start.
    const pause = await runCli(
      ['schedule', 'pause', 'sync-demo-all-incremental', '--note', 'mine'],
      env(),
    );
    expect(pause.code, pause.stderr).toBe(0);

    const second = new CliProcess(['dev'], env());
    try {
      await second.waitForLine(/^The data is in /, 240_000);
      expect(second.stdout).toMatch(/written +0 changed or new; \d+ already up to date/);
      await second.waitForLine(/^ {2}sync-demo-all-full /, 10_000);
      expect(second.stdout).toMatch(
        /^ {2}sync-demo-all-incremental .*\(already there, kept; paused: 'npx ebsync schedule resume sync-demo-all-incremental' resumes it\)$/m,
      );
      expect(second.stdout).toMatch(/^ {2}sync-demo-all-full .*\(already there, kept\)$/m);
      expect((await second.stop('SIGTERM', 60_000)).code).toBe(0);
    } finally {
      second.killAll();
    }
    const listed = await runCli(['schedule', 'list', '--json'], env());
    const schedules = JSON.parse(listed.stdout) as {
      scheduleId: string;
      paused: boolean;
      note: string | null;
    }[];
    expect(schedules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          scheduleId: 'sync-demo-all-incremental',
          paused: true,
          note: 'mine',
        }),
        expect.objectContaining({ scheduleId: 'sync-demo-all-full', paused: false }),
      ]),
    );
    // Both are kept for the starts on a service of the user's own below, and deleted after.
  }, 600_000);

  // After the demo, the README's next step: `EBS_BASE_URL=… EBS_API_KEY=… npm start`, nothing
  // connected to that service yet. The demo's connection still runs, and its sandbox does not:
  // the start mirrored it anyway, retrying ECONNREFUSED, and never said to connect.
  it('started on a service of its own after the demo, says how to connect it and mirrors no demo', async () => {
    own = await startSandbox({ seed: { leads: 5, events: 0, seed: 'own' } });
    // A demo pass in flight as the user starts on their own service (its schedule fired, or
    // the demo's start was stopped mid-pass): run by this start's worker, it retried against
    // the stopped sandbox for as long as the start ran. Fired here with no worker up, it runs
    // once the start's worker polls.
    const trigger = await runCli(['schedule', 'trigger', 'sync-demo-all-full'], env());
    expect(trigger.code, trigger.stderr).toBe(0);
    let inFlight: DemoSchedule | undefined;
    for (const end = Date.now() + 30_000; !inFlight?.running.length && Date.now() < end;) {
      inFlight = (await demoSchedules()).find((s) => s.scheduleId === 'sync-demo-all-full');
    }
    const run = inFlight?.running[0];
    expect(run).toBeDefined();
    const started = new CliProcess(['dev'], ownEnv());
    try {
      await started.waitForLine(/^No connection to |^Mirroring |^Attached /, 120_000);
      // Cancelled, and said so in one line with why; the run and its pass end.
      expect(started.stdout).toMatch(
        new RegExp(
          `^Cancelled the demo's pass in flight \\(${run}( and ${inFlight!.mirrorWorkflowId})?\\): ` +
            `its sandbox runs only under 'npm start' without EBS_BASE_URL, so it could only fail; ` +
            `an interrupted pass deletes nothing, and the next demo start mirrors on\\.$`,
          'm',
        ),
      );
      // Its pass, unless the cancel came before the run had started it.
      expect(await closedAs(inFlight!.mirrorWorkflowId)).toMatch(/^(CANCELED|NOT_STARTED)$/);
      expect(await closedAs(run!)).toMatch(/^(CANCELED|FAILED)$/);
      expect(started.stdout).toContain(
        `No connection to ${own.baseUrl} yet: run 'npx ebsync connect --api-key' (or 'npx ebsync connect' for an installed app) in another terminal, then 'npx ebsync sync --connection default'.\n` +
          `Connection demo is the demo's, and its sandbox runs only under 'npm start' without EBS_BASE_URL: it is not mirrored now. ` +
          `Its records fill ${join(dir, 'data', 'mirror.db')}, which one connection writes: sync yours with --to sqlite:ANOTHER.db, or run 'npx ebsync sync --forget --connection demo' first.\n`,
      );
      expect(started.stdout).not.toMatch(/of connection demo/);
      // This start mirrors no demo. What met the stopped sandbox are the first tries of the
      // pass in flight, which its worker took before the cancel landed; none is tried again
      // (retried, a second try comes a second after the first).
      await sleep(5_000);
      for (const line of `${started.stdout}${started.stderr}`.split('\n')) {
        if (!/ECONNREFUSED/.test(line)) continue;
        expect(line).toContain(`"workflowId":"${inFlight!.mirrorWorkflowId}"`);
        expect(line).toContain('"attempt":1,');
      }
      // The demo's active schedule fired against the stopped sandbox, failing every time: it is
      // paused, and said so; the one its user paused is theirs and is left as it is.
      expect(started.stdout).toContain(DEMO_PAUSED);
      expect(started.stdout).not.toMatch(/sync-demo-all-incremental/);
      expect(await demoSchedules()).toEqual([
        expect.objectContaining({
          scheduleId: 'sync-demo-all-full',
          paused: true,
          note: expect.stringMatching(/^paused by 'npm start' on your own service: /),
        }),
        expect.objectContaining({
          scheduleId: 'sync-demo-all-incremental',
          paused: true,
          note: 'mine',
        }),
      ]);
      // As it says, in another terminal while it runs (the connection's workflow needs its
      // worker); named apart from other files' `default` on the same Temporal server.
      const connect = await runCli(['connect', '--api-key', '--name', OWN], ownEnv(), 60_000);
      expect(connect.code, connect.stderr).toBe(0);
      expect((await started.stop('SIGTERM', 60_000)).code).toBe(0);
    } finally {
      started.killAll();
    }
  }, 300_000);

  // Connected as told (above), with the default file the demo's records fill: the main job
  // started its pass there anyway, which the worker refused, and the summary of a failed pass
  // said less than `ebsync sync` does up front. It checks first, as that does, and starts none.
  it('starts no pass into the file the demo writes, says what to run, and keeps running', async () => {
    const started = new CliProcess(['dev'], ownEnv());
    try {
      // Either outcome, so that a pass started anyway fails here at once, by its summary.
      await started.waitForLine(
        new RegExp(`^(Connection ${OWN} is not mirrored now|Mirror of .* for connection ${OWN}): `),
        180_000,
      );
      expect(started.stdout).toContain(
        `Connection ${OWN} is not mirrored now: ${join(dir, 'data', 'mirror.db')} holds the records of connection demo, ` +
          `and one connection writes a file. Run 'npx ebsync sync --connection ${OWN} --to sqlite:ANOTHER.db' ` +
          `for a file of its own, or 'npx ebsync sync --forget --connection demo' and start again.\n`,
      );
      // Paused by the start before, said again.
      expect(started.stdout).toContain(DEMO_PAUSED);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(started.stdout).not.toMatch(/^(Mirroring|Attached|Mirror of) /m);
      expect(started.stdout).not.toMatch(/Try:|sqlite3 /);
      // The stack runs on as with no connection: its worker mirrors into another file, as said.
      expect(started.running).toBe(true);
      const file = join(dir, 'own.db');
      const sync = await runCli(
        ['sync', '--connection', OWN, '--to', `sqlite:${file}`],
        ownEnv(),
        120_000,
      );
      expect(sync.code, sync.stderr).toBe(0);
      expect(count(file, 'SELECT count(*) AS n FROM leads')).toBe(5);
      expect((await started.stop('SIGTERM', 60_000)).code).toBe(0);
    } finally {
      started.killAll();
      const connection = await Connection.connect({ address: inject('temporalAddress') });
      await new Client({ connection }).workflow
        .getHandle(connectionWorkflowId(OWN))
        .terminate('test over')
        .catch(() => undefined);
      await connection.close();
    }
  }, 300_000);

  it('back on demo data, resumes the demo schedule it paused and keeps the one its user paused', async () => {
    const started = new CliProcess(['dev'], env());
    try {
      await started.waitForLine(/^ {2}sync-demo-all-full /, 240_000);
      expect(started.stdout).toContain(
        "Resumed the demo's sync-demo-all-full, paused while 'npm start' ran on your own service.\n",
      );
      expect(started.stdout).toMatch(/^ {2}sync-demo-all-full .*\(already there, kept\)$/m);
      expect(started.stdout).toMatch(
        /^ {2}sync-demo-all-incremental .*\(already there, kept; paused: 'npx ebsync schedule resume sync-demo-all-incremental' resumes it\)$/m,
      );
      expect((await started.stop('SIGTERM', 60_000)).code).toBe(0);
    } finally {
      started.killAll();
    }
    expect(await demoSchedules()).toEqual([
      expect.objectContaining({ scheduleId: 'sync-demo-all-full', paused: false }),
      expect.objectContaining({
        scheduleId: 'sync-demo-all-incremental',
        paused: true,
        note: 'mine',
      }),
    ]);
    for (const id of ['sync-demo-all-incremental', 'sync-demo-all-full']) {
      expect((await runCli(['schedule', 'delete', id], env())).code).toBe(0);
    }
  }, 300_000);

  // On Node 24, better-sqlite3 12 aborted at exit (test/cli/restarts.test.ts): each of these
  // runs has the sandbox's, the ledger's and the destination's files open when it is stopped.
  it(`${ROUNDS} more starts on the same data, each ready once mirrored and exit 0 when stopped`, async () => {
    await everyRoundExitsClean(['dev'], env, /^The data is in /);
    // The runs made the demo schedules again; other files share this Temporal server.
    for (const id of ['sync-demo-all-incremental', 'sync-demo-all-full']) {
      expect((await runCli(['schedule', 'delete', id], env())).code).toBe(0);
    }
  }, 1_200_000);
});

// The demo's schedules could not be paused (here Temporal refuses every schedule call, as a
// key without the permission would): that failure ended the main job before the user's own
// pass. The rest goes on, and the start says in one line why they are not paused, and how to.
describe('npm start on a service of its own, where the demo schedules cannot be paused', () => {
  let server: TestWorkflowEnvironment | undefined;
  let demoService: Sandbox | undefined;
  let mine: Sandbox | undefined;
  afterAll(async () => {
    await demoService?.close();
    await mine?.close();
    await server?.teardown();
  });

  it("mirrors the user's connection all the same and says what to run", async () => {
    const cliPath = inject('temporalCliPath');
    server = await TestWorkflowEnvironment.createLocal({
      server: {
        ...(cliPath ? { executable: { type: 'existing-path', path: cliPath } } : {}),
        log: { format: 'pretty', level: 'error' },
        extraArgs: [...FAIRNESS_ARGS, '--dynamic-config-value', 'frontend.enableSchedules=false'],
      },
    });
    demoService = await startSandbox({ seed: { leads: 3, events: 0, seed: 'demo-away' } });
    mine = await startSandbox({ seed: { leads: 5, events: 0, seed: 'mine-away' } });
    const env = {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: 'main-job-away',
      EBSYNC_DATA_DIR: join(dir, 'away'),
    };
    const on = (sb: Sandbox) => ({
      ...env,
      EBS_BASE_URL: sb.baseUrl,
      EBS_API_KEY: sb.apiKey,
      EBS_CA_FILE: sb.caFile ?? '',
    });
    // A connection named as the demo's, to a service that is not the configured one, and the
    // user's own; nothing mirrored yet.
    const worker = new CliProcess(['worker'], env);
    try {
      await worker.waitForLine(/worker started/, 90_000);
      for (const [sb, name] of [
        [demoService, ['--name', 'demo']],
        [mine, []],
      ] as const) {
        const connect = await runCli(['connect', '--api-key', ...name], on(sb));
        expect(connect.code, connect.stderr).toBe(0);
      }
      expect((await worker.stop('SIGTERM', 30_000)).code).toBe(0);
    } finally {
      worker.killAll();
    }
    const started = new CliProcess(['dev'], on(mine));
    try {
      await started.waitForLine(/^The data is in /, 120_000);
      expect(started.stdout).toContain(
        "The demo's schedules could not be paused (7 PERMISSION_DENIED: Schedules are disabled on this namespace.): " +
          "each of their passes fails against the demo's stopped sandbox. Pause them with " +
          "'npx ebsync schedule pause sync-demo-all-incremental' and 'npx ebsync schedule pause sync-demo-all-full', " +
          "or delete them with 'npx ebsync schedule delete sync-demo-all-incremental' and " +
          "'npx ebsync schedule delete sync-demo-all-full'.\n",
      );
      expect(started.stdout).not.toMatch(/^\s+at /m);
      expect(started.stderr).not.toMatch(/^ebsync: /m);
      expect(started.stdout).toMatch(/^Status page: http:\/\/127\.0\.0\.1:\d+\/ /m);
      expect(started.stdout).toMatch(/webhook receiver listening/);
      expect(count(join(dir, 'away', 'mirror.db'), 'SELECT count(*) AS n FROM leads')).toBe(5);
      expect(started.running).toBe(true);
      expect((await started.stop('SIGTERM', 60_000)).code).toBe(0);
    } finally {
      started.killAll();
    }
  }, 400_000);
});

describe('ebsync sync', () => {
  let stack: CliStack;
  let env: Record<string, string>;

  beforeAll(async () => {
    stack = await startCliStack({
      name: 'sync-cli',
      sandbox: { seed: { leads: 300, events: 40 } },
      connect: '',
    });
    env = stack.env;
  }, 180_000);

  afterAll(async () => {
    await stack?.close();
  });

  it('refuses a destination it cannot write in one line, exit 2', async () => {
    const bad = await runCli(['sync', '--to', 'mysql://root:hunter2@db/x'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/sqlite:PATH or postgres:\/\//);
    expect(bad.stderr).not.toMatch(/hunter2/);
    const what = await runCli(['sync', 'invoices'], env);
    expect(what.code).toBe(2);
    expect(what.stderr).toMatch(/expected leads, events, appointments or all/);
  });

  it('mirrors a connection with a summary, then --status reports the pass', async () => {
    const file = join(dir, 'synced.db');
    const sync = await runCli(['sync', '--full', '--to', `sqlite:${file}`], env, 180_000);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toMatch(/: done/);
    expect(count(file, 'SELECT count(*) AS n FROM leads')).toBe(300);
    expect(count(file, 'SELECT count(*) AS n FROM events')).toBe(40);

    const status = await runCli(['sync', '--status', '--json', '--to', `sqlite:${file}`], env);
    expect(status.code, status.stderr).toBe(0);
    const progress = JSON.parse(status.stdout) as {
      status: string;
      phase: string;
      counts: { read: number };
    };
    expect(progress.status).toBe('COMPLETED');
    expect(progress.phase).toBe('done');
    expect(progress.counts.read).toBeGreaterThanOrEqual(300);

    // A pass watched to its end with --json says the same things, status included.
    const again = await runCli(['sync', '--json', '--to', `sqlite:${file}`], env, 180_000);
    expect(again.code, again.stderr).toBe(0);
    const ended = JSON.parse(again.stdout) as Record<string, unknown>;
    expect(ended.status).toBe('COMPLETED');
    expect(ended.phase).toBe('done');
    expect(Object.keys(ended).sort()).toEqual(Object.keys(progress).sort());
  }, 240_000);
});
