import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScheduleView } from '../../cli/schedule-views.js';
import { destinationIds } from '../mirror/source-truth.js';
import { CliProcess, runCli } from '../helpers/cli.js';
import { closedPort } from '../helpers/ports.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';
import { eventually } from '../schedules/schedule-worker.js';

/** `ebsync schedule …` as a user runs it, with a worker and a connection of its own. */
const CONNECTION = 'schedule-cli';
const LEADS = 60;

let stack: CliStack;
let dir: string;
let env: Record<string, string>;
const created: string[] = [];

beforeAll(async () => {
  stack = await startCliStack({
    name: 'schedule-cli',
    sandbox: { seed: { leads: LEADS, events: 5 } },
    connect: CONNECTION,
  });
  ({ dir, env } = stack);
}, 180_000);

afterAll(async () => {
  for (const id of created) await runCli(['schedule', 'delete', id], env).catch(() => undefined);
  await stack?.close();
});

const describeJson = async (id: string): Promise<ScheduleView> => {
  const result = await runCli(['schedule', 'describe', id, '--json'], env);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as ScheduleView;
};

describe('ebsync schedule', { timeout: 120_000 }, () => {
  it.for([
    [['create'], 'say when: --every <duration> or --cron <expression>'],
    [['create', '--every', '5m', '--timezone', 'UTC'], '--timezone goes with --cron only'],
    [['create', 'invoices', '--every', '5m'], 'expected leads, events, appointments or all'],
    [['create', '--cron', '0 3 * * *', '--timezone', 'Mars/Base'], 'is not a time zone'],
    [['create', '--every', '5m', '--cron', '0 3 * * *'], 'cannot be used with option'],
    [['create', '--every', 'soon'], 'Expected a duration'],
    [['create', '--cron', 'every tuesday', '--connection', CONNECTION], 'expected five fields'],
    [
      ['create', '--cron', '61 * * * *'],
      "--cron '61 * * * *': the minute field (1 of 5): 61 is out of range (allowed: 0-59)",
    ],
    [
      ['create', '--cron', '0 25 * * *'],
      'the hour field (2 of 5): 25 is out of range (allowed: 0-23)',
    ],
    [['create', '--cron', '*/0 * * * *'], "the minute field (1 of 5): its step in '*/0' is 0"],
    [
      ['create', '--cron', '0 3 * * 9'],
      'the day of week field (5 of 5): 9 is out of range (allowed: 0-7 or SUN-SAT)',
    ],
    [
      ['create', '--cron', '0 3 31 2 *', '--timezone', 'UTC', '--connection', CONNECTION],
      "--cron '0 3 31 2 *' never fires (no date matches it in UTC); no schedule was created",
    ],
  ] as const)('ebsync schedule %j: one line, exit 2', async ([args, message]) => {
    const result = await runCli(['schedule', ...args], env);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain(message);
  });

  it.for([
    [['create', '--every', '5m', '--connection', 'nobody']],
    [['list', '--connection', 'nobody']],
    [['list', '--connection', 'nobody', '--json']],
  ] as const)(
    'ebsync schedule %j of a connection that does not exist: one line, exit 1',
    async ([args]) => {
      const result = await runCli(['schedule', ...args], env);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toBe(
        "ebsync: no connection named 'nobody': 'ebsync connect --name nobody' connects it\n",
      );
      expect(result.stdout).toBe('');
    },
  );

  it.for([
    ['a Postgres nothing answers at', 'ECONNREFUSED'],
    ['an SQLite file whose folder cannot be made', 'its file system does not allow it'],
  ] as const)(
    'a destination that cannot be opened (%s): one line, exit 1, nothing created',
    async ([kind, why]) => {
      const to =
        kind === 'an SQLite file whose folder cannot be made'
          ? 'sqlite:/proc/ebsync-nope/mirror.db'
          : `postgres://ebsync:s3cret-pw@127.0.0.1:${await closedPort()}/crm`;
      const masked = to.replace('ebsync:s3cret-pw@', '***@');
      const result = await runCli(
        ['schedule', 'create', '--every', '5m', '--connection', CONNECTION, '--to', to],
        env,
        20_000,
      );
      expect(result.code, result.stderr).toBe(1);
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`ebsync: cannot open destination ${masked}: `);
      expect(lines[0]).toContain(why);
      expect(lines[0]).toMatch(
        /; no schedule was created \(opened from this machine: --no-check-destination skips the check\)$/,
      );
      expect(result.stdout + result.stderr).not.toContain('s3cret-pw');
      const list = await runCli(['schedule', 'list', '--connection', CONNECTION, '--json'], env);
      expect(list.code, list.stderr).toBe(0);
      const destinations = (JSON.parse(list.stdout) as ScheduleView[]).map((v) => v.destination);
      expect(destinations).not.toContain(masked);
    },
  );

  it('--no-check-destination creates it without opening the database from here', async () => {
    const to = `postgres://ebsync:s3cret-pw@127.0.0.1:${await closedPort()}/unchecked`;
    const result = await runCli(
      [
        'schedule',
        'create',
        '--every',
        '5m',
        '--paused',
        '--connection',
        CONNECTION,
        '--to',
        to,
        '--no-check-destination',
      ],
      env,
      20_000,
    );
    expect(result.code, result.stderr).toBe(0);
    const id = /^created schedule (\S+):/.exec(result.stdout)?.[1] ?? '';
    expect(id).toMatch(new RegExp(`^sync-${CONNECTION}-all-incremental-[0-9a-f]{12}$`));
    // Gone before the tests that list this connection's schedules.
    const deleted = await runCli(['schedule', 'delete', id], env);
    expect(deleted.code, deleted.stderr).toBe(0);
  });

  it('a connection that needs re-authorization: created, with a warning saying what to run', async () => {
    const revoked = `${CONNECTION}-revoked`;
    const key = stack.sb.admin.createKey({ name: 'revoked soon' });
    const connect = await runCli(['connect', '--api-key', '--name', revoked], {
      ...env,
      EBS_API_KEY: key.key,
    });
    expect(connect.code, connect.stderr).toBe(0);
    stack.sb.admin.revokeKey(key.id);
    // The pass meets the 401 and the connection is needs_reauth.
    const to = `sqlite:${join(dir, 'revoked.db')}`;
    const sync = await runCli(['sync', 'leads', '--connection', revoked, '--to', to], env, 120_000);
    expect(sync.code).toBe(1);
    const of = ['--connection', revoked, '--to', to];
    const result = await runCli(['schedule', 'create', 'leads', '--every', '1h', ...of], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^created schedule sync-schedule-cli-revoked-leads-incremental-/);
    // Its passes would fail until the reconnect: it used to be created without a word.
    expect(result.stderr).toBe(
      `ebsync: warning: connection '${revoked}' needs re-authorization (the service refused the integration key (401)), so its scheduled passes fail until then: run 'ebsync connect --api-key --name ${revoked}'\n`,
    );
    const id = /^created schedule (\S+):/.exec(result.stdout)?.[1] ?? '';
    expect((await runCli(['schedule', 'delete', id], env)).code).toBe(0);
  }, 240_000);

  it('disconnect names the schedules it leaves, whose passes fail until a connect', async () => {
    const leaving = `${CONNECTION}-leaving`;
    expect((await runCli(['connect', '--api-key', '--name', leaving], env)).code).toBe(0);
    const of = ['--connection', leaving, '--to', `sqlite:${join(dir, 'leaving.db')}`];
    const made = await runCli(['schedule', 'create', '--every', '1h', ...of], env);
    expect(made.code, made.stderr).toBe(0);
    const paused = await runCli(
      ['schedule', 'create', '--full', '--every', '1h', '--paused', ...of],
      env,
    );
    expect(paused.code, paused.stderr).toBe(0);
    const ids = [made, paused].map((r) => /^created schedule (\S+):/.exec(r.stdout)?.[1] ?? '');
    try {
      const gone = await runCli(['disconnect', leaving], env, 120_000);
      expect(gone.code, gone.stderr).toBe(0);
      // It used to say nothing of them: 'ebsync status' showed their passes failing.
      expect(gone.stdout).toContain(
        `schedules: its 2 schedules stay (${[...ids].sort().join(', ')}), 1 not paused, each starts passes that fail until 'ebsync connect --api-key --name ${leaving}' connects it again; 'ebsync schedule delete ID' removes one\n`,
      );
    } finally {
      for (const id of ids) await runCli(['schedule', 'delete', id], env);
    }
  }, 240_000);

  it('an unknown schedule is one line, exit 1', async () => {
    const result = await runCli(['schedule', 'pause', 'sync-nobody-all-full'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "ebsync: no schedule 'sync-nobody-all-full': 'ebsync schedule list' shows the ones there are\n",
    );
  }, 120_000);

  it('create, list, trigger, describe, pause, resume, delete; a triggered pass is the mirror ebsync sync shows', async () => {
    const file = join(dir, 'scheduled.db');
    const create = await runCli(
      [
        'schedule',
        'create',
        '--full',
        '--cron',
        // Kept as read: a trailing newline once split `schedule list` across lines.
        ' 0  0 1 1 *\n',
        '--timezone',
        'UTC',
        '--to',
        `sqlite:${file}`,
        '--connection',
        CONNECTION,
      ],
      env,
    );
    expect(create.code, create.stderr).toBe(0);
    const id = /^created schedule (\S+):/.exec(create.stdout)?.[1] ?? '';
    created.push(id);
    expect(id).toMatch(new RegExp(`^sync-${CONNECTION}-all-full-[0-9a-f]{12}$`));
    expect(create.stdout).toContain("cron '0 0 1 1 *' (UTC)");

    const again = await runCli(
      [
        'schedule',
        'create',
        '--full',
        '--every',
        '1h',
        '--to',
        `sqlite:${file}`,
        '--connection',
        CONNECTION,
      ],
      env,
    );
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`schedule '${id}' exists`);

    const list = await runCli(['schedule', 'list', '--connection', CONNECTION, '--json'], env);
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as ScheduleView[];
    expect(listed.map((s) => s.scheduleId)).toEqual([id]);
    expect(listed[0]).toMatchObject({ connectionId: CONNECTION, mode: 'full', overlap: 'SKIP' });

    const trigger = await runCli(['schedule', 'trigger', id], env);
    expect(trigger.code, trigger.stderr).toBe(0);
    await eventually(
      'the triggered pass to fill the mirror',
      async () => {
        const ids = await destinationIds(`sqlite:${file}`, 'leads').catch(() => []);
        return ids.length === LEADS ? ids : undefined;
      },
      120_000,
    );
    // The scheduled pass ran under the mirror's own id: `ebsync sync --status` reports it.
    const status = await eventually(
      'the pass to complete',
      async () => {
        const result = await runCli(
          ['sync', '--status', '--json', '--to', `sqlite:${file}`, '--connection', CONNECTION],
          env,
        );
        const progress = JSON.parse(result.stdout || '{}') as { status?: string; mode?: string };
        return progress.status === 'COMPLETED' ? progress : undefined;
      },
      120_000,
    );
    expect(status.mode).toBe('full');

    const described = await describeJson(id);
    expect(described.actionsTaken).toBe(1);
    expect(described.recentRuns).toHaveLength(1);

    // A note holds what its writer typed, escape sequences too; it reaches other people's
    // terminals, which show it written out, not run.
    const note = 'holiday\x1b]0;pwned\x07\x1b[2J';
    const pause = await runCli(['schedule', 'pause', id, '--note', note], env);
    expect(pause.stdout).toBe(`paused ${id}\n`);
    // A paused schedule fires at no time: none is shown as its next run.
    expect(await describeJson(id)).toMatchObject({ paused: true, note, nextRuns: [] });
    const text = await runCli(['schedule', 'describe', id], env);
    expect(text.stdout).toContain(`${id}: paused (holiday\\x1b]0;pwned\\x07\\x1b[2J)`);
    expect(text.stdout).not.toContain('\x1b');
    // A note of Temporal's 1,000 bytes is taken whole (one more is refused before Temporal is
    // asked: test/cli/schedule-refusals.test.ts).
    const longest = 'n'.repeat(1000);
    const resume = await runCli(['schedule', 'resume', id, '--note', longest], env);
    expect(resume.stdout, resume.stderr).toBe(`resumed ${id}\n`);
    const resumed = await describeJson(id);
    expect(resumed.note).toBe(longest);
    expect(resumed.paused).toBe(false);
    expect(resumed.nextRuns.length).toBeGreaterThan(0);

    const deleted = await runCli(['schedule', 'delete', id], env);
    expect(deleted.stdout).toBe(`deleted ${id}\n`);
    expect((await runCli(['schedule', 'describe', id], env)).code).toBe(1);
  }, 400_000);

  it('a cron naming both a day of month and a day of week fires on either, as crontab(5) says', async () => {
    const create = await runCli(
      [
        'schedule',
        'create',
        'appointments',
        '--cron',
        '0 3 1 * mon',
        '--timezone',
        'UTC',
        '--to',
        `sqlite:${join(dir, 'either-day.db')}`,
        '--connection',
        CONNECTION,
      ],
      env,
    );
    expect(create.code, create.stderr).toBe(0);
    const id = /^created schedule (\S+):/.exec(create.stdout)?.[1] ?? '';
    created.push(id);
    // Deleted at once: it would run on the next Monday or 1st at 03:00 UTC.
    const view = await describeJson(id);
    await runCli(['schedule', 'delete', id], env);
    expect(view.when).toBe("cron '0 3 1 * mon' (UTC)");
    const runs = view.nextRuns.map((t) => new Date(t));
    expect(runs.length).toBeGreaterThan(5);
    // Temporal alone runs it only on a 1st that is a Monday: in February 2027 at the soonest.
    for (const run of runs) {
      expect(run.getUTCDay() === 1 || run.getUTCDate() === 1, run.toISOString()).toBe(true);
    }
    expect(runs[0]!.getTime() - Date.now()).toBeLessThanOrEqual(8 * 24 * 3600_000);
    expect(runs.some((r) => r.getUTCDate() === 1)).toBe(true);
  });

  it('a second pause keeps the reason the first gave; a resume of an active one changes nothing', async () => {
    const create = await runCli(
      [
        'schedule',
        'create',
        'leads',
        '--cron',
        '0 0 1 1 *',
        '--timezone',
        'UTC',
        '--to',
        `sqlite:${join(dir, 'paused-twice.db')}`,
        '--connection',
        CONNECTION,
      ],
      env,
    );
    expect(create.code, create.stderr).toBe(0);
    const id = /^created schedule (\S+):/.exec(create.stdout)?.[1] ?? '';
    created.push(id);

    const first = await runCli(['schedule', 'pause', id, '--note', 'migrating the CRM'], env);
    expect(first.stdout, first.stderr).toBe(`paused ${id}\n`);
    // Temporal would take this pause as a new note, the default one, over the reason above.
    const second = await runCli(['schedule', 'pause', id], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toBe(`already paused: ${id}; nothing changed\n`);
    expect(await describeJson(id)).toMatchObject({ paused: true, note: 'migrating the CRM' });
    // A note of the user's own replaces it, and the line says the schedule was paused already.
    const renoted = await runCli(['schedule', 'pause', id, '--note', 'back on Monday'], env);
    expect(renoted.stdout, renoted.stderr).toBe(`already paused: ${id}; its note replaced\n`);
    expect(await describeJson(id)).toMatchObject({ paused: true, note: 'back on Monday' });

    const resumed = await runCli(['schedule', 'resume', id, '--note', 'CRM migrated'], env);
    expect(resumed.stdout, resumed.stderr).toBe(`resumed ${id}\n`);
    const again = await runCli(['schedule', 'resume', id], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(`not paused: ${id}; nothing to resume\n`);
    expect(await describeJson(id)).toMatchObject({ paused: false, note: 'CRM migrated' });
  });

  it('a connection paused after a pass used it sends no request in the next pass', async () => {
    const used = `${CONNECTION}-used`;
    expect((await runCli(['connect', '--api-key', '--name', used], env)).code).toBe(0);
    const to = `sqlite:${join(dir, 'paused-after-use.db')}`;
    const args = ['--to', to, '--connection', used];
    // A first pass: the worker keeps this connection's client for the next one.
    const first = await runCli(['sync', 'leads', ...args], env, 120_000);
    expect(first.code, first.stderr).toBe(0);
    expect((await runCli(['connections', 'pause', used], env)).code).toBe(0);
    try {
      // The worker checks a connection's state every 10 s: after that, not one request.
      await new Promise((r) => setTimeout(r, 11_000));
      const listed = (): number => {
        const leads = stack.sb.admin.counters().requests['leads.list'];
        return Object.values(leads ?? {}).reduce((sum, n) => sum + n, 0);
      };
      const before = listed();
      const sync = new CliProcess(['sync', 'leads', '--full', ...args], env);
      await eventually(
        'the paused pass to start',
        () => Promise.resolve(sync.stderr.includes('started the mirror') ? true : undefined),
        60_000,
      );
      await new Promise((r) => setTimeout(r, 4_000));
      expect(listed()).toBe(before);
      expect((await sync.stop('SIGINT', 60_000)).code).toBe(0);
      expect((await runCli(['sync', '--cancel', ...args], env)).code).toBe(0);
    } finally {
      await runCli(['connections', 'resume', used], env);
    }
  }, 240_000);

  it('ebsync sync: Ctrl-C detaches, --status shows the pass, --cancel stops it and it writes nothing after', async () => {
    // A paused connection holds its sync before any request, so the pass is surely running.
    // One no pass has used yet: a worker re-checks a cached credential's state only every 10 s.
    const held = `${CONNECTION}-held`;
    const connect = await runCli(['connect', '--api-key', '--name', held], env);
    expect(connect.code, connect.stderr).toBe(0);
    expect((await runCli(['connections', 'pause', held], env)).code).toBe(0);
    const to = `sqlite:${join(dir, 'cancelled.db')}`;
    const args = ['--to', to, '--connection', held];
    try {
      const sync = new CliProcess(['sync', 'leads', ...args], env);
      await eventually(
        'the sync to start',
        () => Promise.resolve(sync.stderr.includes('started the mirror') ? true : undefined),
        60_000,
      );
      const detached = await sync.stop('SIGINT', 60_000);
      expect(detached.code).toBe(0);
      expect(detached.stderr).toMatch(/detached: the sync goes on in Temporal/);
      // The follow-ups it names act on this mirror, not on the default destination's.
      expect(detached.stderr).toContain(
        `  see it:  ebsync sync --status --connection ${held} --to ${to}\n` +
          `  stop it: ebsync sync --cancel --connection ${held} --to ${to}\n`,
      );

      const running = await runCli(['sync', '--status', '--json', ...args], env);
      expect(running.code, running.stderr).toBe(0);
      expect(JSON.parse(running.stdout)).toMatchObject({ status: 'RUNNING' });

      // Another subject into the same destination attaches to that pass, and says it is not
      // the pass asked for.
      const other = new CliProcess(['sync', 'appointments', '--full', ...args], env);
      await eventually(
        'the attached sync to say what it attached to',
        () => Promise.resolve(other.stderr.includes('was not started') ? true : undefined),
        60_000,
      );
      expect(other.stderr).toContain('attached to the mirror already running (mirror-');
      expect(other.stderr).toContain(
        'the running pass is an incremental pass of leads, not the full pass of appointments asked for, which was not started (one pass at a time per connection and destination); run it again once this one ends\n',
      );
      expect((await other.stop('SIGINT', 60_000)).code).toBe(0);

      // A sync watching the pass when it is canceled from elsewhere says so, and exits 1.
      const watcher = new CliProcess(['sync', 'leads', ...args], env);
      await eventually(
        'the watching sync to attach',
        () => Promise.resolve(watcher.stderr.includes('attached to the mirror') ? true : undefined),
        60_000,
      );
      const cancel = await runCli(['sync', '--cancel', ...args], env);
      expect(cancel.code, cancel.stderr).toBe(0);
      expect(cancel.stdout).toBe(
        `canceled the mirror of connection ${held}; the interrupted pass deleted nothing\n`,
      );
      await eventually(
        'the watching sync to end',
        () => Promise.resolve(watcher.running ? undefined : true),
        60_000,
      );
      const watched = await watcher.stop('SIGINT', 1_000);
      expect(watched.code, watched.stderr).toBe(1);
      expect(watched.stdout).toMatch(
        new RegExp(
          `^Mirror of leads \\(incremental\\) for connection ${held}: canceled while (planning|reading|deleting)\\n`,
        ),
      );
      const after = await runCli(['sync', '--status', '--json', ...args], env);
      expect(JSON.parse(after.stdout)).toMatchObject({ status: 'CANCELLED' });
      const again = await runCli(['sync', '--cancel', ...args], env);
      expect(again.stdout).toBe(
        `the mirror of connection ${held} into ${to} is not running (its last pass canceled)\n`,
      );
      // As it ended: said canceled (not "reading"), its elapsed time not running on.
      const shownOnce = await runCli(['sync', '--status', ...args], env);
      expect(shownOnce.code).toBe(1);
      const otherSubject = await runCli(['sync', 'appointments', '--status', ...args], env);
      expect(otherSubject.stderr).toBe(
        'ebsync: the pass shown is of leads, not appointments: a mirror (one per connection and destination) shows its latest pass, whatever it mirrored\n',
      );
      expect(shownOnce.stdout).toMatch(
        new RegExp(
          `^canceled\\nMirror of leads \\(incremental\\) for connection ${held}: canceled while (planning|reading|deleting)\\n`,
        ),
      );
      await new Promise((r) => setTimeout(r, 1_500));
      const shownAgain = await runCli(['sync', '--status', ...args], env);
      expect(shownAgain.stdout).toBe(shownOnce.stdout);
    } finally {
      await runCli(['connections', 'resume', held], env);
    }
    // Resumed, the cancelled pass stays cancelled: nothing reaches its destination.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await destinationIds(to, 'leads').catch(() => [])).toEqual([]);
  }, 300_000);
});
