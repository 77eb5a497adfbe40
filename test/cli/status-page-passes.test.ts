import { describe, expect, it } from 'vitest';
import { forbiddenHead, progressLine } from '../../cli/mirror-summary.js';
import { reportHtml } from '../../cli/status-page.js';
import { receiverNotRunning, type ScheduleStatusView } from '../../cli/status-sections.js';
import { findProblems, type PassView, type StatusReport } from '../../cli/status-model.js';
import { statusText } from '../../cli/status.js';
import { emptyCounts, type MirrorProgress } from '../../workflows/mirror-types.js';

/** A pass of mirror-shop-1 as collectStatus builds it: running a minute, unless `over` says. */
function passOf(over: Partial<PassView>, now = Date.now()): PassView {
  return {
    workflowId: 'mirror-shop-1',
    runId: 'run-1',
    status: 'running',
    startedAt: now - 60_000,
    closedAt: null,
    progress: null,
    error: null,
    retrying: null,
    uiUrl: 'http://localhost:8233/namespaces/default/workflows/mirror-shop-1',
    ...over,
  };
}

/** A report as collectStatus builds it, of mirror-shop-1 running `pass`. */
function reportWith(pass: PassView): StatusReport {
  return {
    generatedAt: Date.now(),
    temporal: { namespace: 'default', taskQueue: 'ebsync', uiUrl: 'http://localhost:8233' },
    connections: [],
    mirrors: [
      {
        workflowId: 'mirror-shop-1',
        connectionId: 'shop',
        destination: 'sqlite:/tmp/m.db',
        current: pass,
        last: null,
        lastCompleted: null,
        connectionGone: null,
      },
    ],
    destinations: [],
    schedules: [],
    webhooks: receiverNotRunning('http://127.0.0.1:8790/webhooks/_stats', 'no answer'),
    inbox: { store: 'sqlite:/tmp/store.db', error: null, connections: [] },
    automations: { endpoints: [], error: null },
    rateLimitedLastHour: 0,
    problems: [],
  };
}

/** The status page's line for a pass, from a report as collectStatus builds it. */
function pageFor(progress: MirrorProgress, over: Partial<PassView> = {}): string {
  return reportHtml(reportWith(passOf({ progress, ...over })), new Map(), null);
}

function progress(read: number, expected: number, pace?: number): MirrorProgress {
  return {
    connectionId: 'shop',
    destination: 'sqlite:/tmp/m.db',
    mode: 'full',
    subjects: ['leads'],
    phase: 'reading',
    passId: 'p#1',
    generation: 1,
    startedAt: Date.now() - 60_000,
    elapsedMs: 60_000,
    partitions: { total: 4, done: 2 },
    counts: { ...emptyCounts(), read, expected, written: read },
    gaps: [],
    refusals: [],
    ratePerSecond: 10,
    etaMs: null,
    error: null,
    ...(pace === undefined ? {} : { pace }),
  };
}

describe("the status page's line for a running pass", () => {
  it('says reads past what the lists counted as the terminal does, not "7563 of 5345"', () => {
    const past = pageFor(progress(7563, 5345));
    expect(past).toContain(
      '<b>7563</b> read (the lists counted 5345; the rest came by id or again), ',
    );
    expect(past).not.toContain('of 5345');
    expect(pageFor(progress(2000, 5345))).toContain('<b>2000</b> of 5345 read (37%), ');
    expect(pageFor(progress(12, 0))).toContain('<b>12</b> read, ');
  });

  it("says reads past the lists' count in the terminal's own words", () => {
    const past = progress(7563, 5345);
    const terminal = /^reading: 7563( read \(.+?\)), /.exec(progressLine(past));
    expect(terminal).not.toBeNull();
    expect(pageFor(past)).toContain(`<b>7563</b>${terminal?.[1] ?? ''}, `);
  });

  it("says the count so far, in the terminal's words, while events are still read by id", () => {
    const events = { ...progress(3709, 3816), partitions: { total: 4, done: 3, uncounted: 1 } };
    const terminal = /^reading: 3709( read \(.+?\)), /.exec(progressLine(events));
    expect(terminal?.[1]).toBe(
      ' read (the lists counted 3816 so far; events are read by id, uncounted)',
    );
    expect(pageFor(events)).toContain(`<b>3709</b>${terminal?.[1] ?? ''}, `);
    expect(pageFor(events)).not.toContain('of 3816 read');
  });

  it('says when the service slowed the connection', () => {
    expect(pageFor(progress(10, 100, 1 / 16))).toContain(
      'slowed to 6.3 % of EBS_RATE_LIMIT: the service turned requests away for its rate',
    );
    expect(pageFor(progress(10, 100))).not.toContain('slowed');
  });

  it('lists what its credential may not read, with the words the terminal uses (escaped)', () => {
    const line = 'appointments: appointments.list: HTTP 403 lacks <appointment_read>';
    const page = pageFor({ ...progress(10, 10), phase: 'incomplete', forbidden: [line] });
    expect(page).toContain(
      `<div class="problems" data-testid="forbidden-current">${forbiddenHead([line]).replace("'", '&#39;')}<ul>` +
        '<li>appointments: appointments.list: HTTP 403 lacks &lt;appointment_read&gt;</li></ul></div>',
    );
    expect(pageFor(progress(10, 10))).not.toContain('data-testid="forbidden-');
  });

  it('says its activities wait for a worker, on the page as in the terminal', () => {
    const workerWait = { since: Date.parse('2026-12-07T22:14:03.250Z'), taskQueue: "ebsync'2" };
    const words =
      "its activities wait for a worker since 2026-12-07T22:14:03Z (every activity slot of the workers on task queue 'ebsync'2' is taken, by other passes, or no worker polls it for activities)";
    expect(pageFor(progress(10, 100), { workerWait })).toContain(
      `<div class="paused" data-testid="worker-wait-current">waiting: ${words.replace(/'/g, '&#39;')}</div>`,
    );
    expect(statusText(reportWith(passOf({ progress: progress(10, 100), workerWait })))).toContain(
      `\n            waiting: ${words}\n`,
    );
    expect(pageFor(progress(10, 100))).not.toContain('worker-wait');
  });
});

describe('a canceled last pass', () => {
  it('is a problem in words, without Temporal\'s "Workflow canceled", until a pass runs', () => {
    const now = Date.now();
    const canceled = passOf({ runId: 'run-2', status: 'canceled', closedAt: now - 50_000 }, now);
    const mirror = {
      workflowId: 'mirror-shop-1',
      connectionId: 'shop',
      destination: 'sqlite:/tmp/m.db',
      current: null,
      last: canceled,
      lastCompleted: null,
      connectionGone: null,
    };
    expect(findProblems({ mirrors: [mirror] }).map((p) => p.message)).toEqual([
      "mirror of connection shop into sqlite:/tmp/m.db: last pass canceled before it ended; 'ebsync sync --connection shop --to sqlite:/tmp/m.db' runs it again",
    ]);
    const running = { ...canceled, runId: 'run-3', status: 'running' as const, closedAt: null };
    expect(findProblems({ mirrors: [{ ...mirror, current: running }] })).toEqual([]);
  });

  it("names the mirror's destination in the command, a CRM's or a Postgres one's with its login to fill in", () => {
    const now = Date.now();
    const canceled = passOf({ runId: 'run-2', status: 'canceled', closedAt: now - 50_000 }, now);
    const into = (destination: string) =>
      findProblems({
        mirrors: [
          {
            workflowId: 'mirror-shop-1',
            connectionId: 'shop',
            destination,
            current: null,
            last: canceled,
            lastCompleted: null,
            connectionGone: null,
          },
        ],
      }).map((p) => p.message);
    expect(into('hubspot')).toEqual([
      "mirror of connection shop into hubspot: last pass canceled before it ended; 'ebsync sync --connection shop --to hubspot' runs it again",
    ]);
    expect(into('postgres://***@db:5432/crm')).toEqual([
      "mirror of connection shop into postgres://***@db:5432/crm: last pass canceled before it ended; 'ebsync sync --connection shop --to postgres://USER:PASSWORD@db:5432/crm' runs it again",
    ]);
  });
});

describe('a last pass that wrote records only in part', () => {
  const now = Date.now();
  const progress: MirrorProgress = {
    connectionId: 'shop',
    destination: 'hubspot',
    mode: 'incremental',
    subjects: ['leads'],
    phase: 'done',
    passId: 'p#1',
    generation: 1,
    startedAt: now - 60_000,
    elapsedMs: 1_000,
    partitions: { total: 2, done: 2 },
    counts: { ...emptyCounts(), read: 10, written: 10 },
    gaps: [],
    refusals: ['leads 4 written in part: VALIDATION_ERROR: Property values were not valid'],
    ratePerSecond: 10,
    etaMs: 0,
    error: null,
  };
  const mirrorOf = (p: MirrorProgress) => ({
    workflowId: 'mirror-shop-1',
    connectionId: 'shop',
    destination: 'hubspot',
    current: null,
    last: passOf({ status: 'completed', closedAt: now - 50_000, progress: p }, now),
    lastCompleted: null,
    connectionGone: null,
  });

  it('is a problem, though it refused none', () => {
    expect(findProblems({ mirrors: [mirrorOf(progress)] }).map((p) => p.message)).toEqual([
      'mirror of connection shop into hubspot: last pass incomplete: records written only in part',
    ]);
    expect(findProblems({ mirrors: [mirrorOf({ ...progress, refusals: [] })] })).toEqual([]);
  });

  it('names the first of several gaps and says how many more there are', () => {
    // ebsync status once said "11 records unreachable (appointments: 4 unreachable in …)" with
    // the 7 event bookings of a second gap line left unsaid.
    const gaps = [
      'appointments: 4 unreachable in start_date=2027-03-16, end_date=2027-03-16: one day holds more than the reach',
      'event_bookings: 7 unreachable in event_date_start=2027-03-15, event_date_end=2027-03-15: one day holds more than the reach',
    ];
    const incomplete = mirrorOf({
      ...progress,
      phase: 'incomplete',
      counts: { ...progress.counts, unreachable: 11 },
      gaps,
      refusals: [],
    });
    expect(findProblems({ mirrors: [incomplete] }).map((p) => p.message)).toEqual([
      `mirror of connection shop into hubspot: last pass incomplete: 11 records unreachable (${gaps[0]}; and 1 more gap line)`,
    ]);
  });
});

describe('a pass that failed before its connection was connected again', () => {
  it('is a problem that no longer says to connect it', () => {
    const now = Date.now();
    const failed = {
      ...passOf({ runId: 'run-4', status: 'failed', closedAt: now - 60_000 }, now),
      error: "connection 'shop' was disconnected; 'ebsync connect --name shop' connects it anew",
    };
    const mirror = {
      workflowId: 'mirror-shop-1',
      connectionId: 'shop',
      destination: 'sqlite:/tmp/m.db',
      current: null,
      last: failed,
      lastCompleted: null,
      connectionGone: null,
    };
    const connected = now - 30_000;
    expect(
      findProblems({ mirrors: [mirror], connectedAt: new Map([['shop', connected]]) }).map(
        (p) => p.message,
      ),
    ).toEqual([
      `mirror of connection shop into sqlite:/tmp/m.db: last pass failed (connection 'shop' was disconnected; 'ebsync connect --name shop' connects it anew) before the connection was connected again (${new Date(connected).toISOString()}); 'ebsync sync --connection shop --to sqlite:/tmp/m.db' runs it again`,
    ]);
    // Connected before it failed: the failure's own words stand.
    expect(
      findProblems({ mirrors: [mirror], connectedAt: new Map([['shop', now - 90_000]]) }).map(
        (p) => p.message,
      ),
    ).toEqual([
      "mirror of connection shop into sqlite:/tmp/m.db: last pass failed: connection 'shop' was disconnected; 'ebsync connect --name shop' connects it anew",
    ]);
  });
});

describe('a pass retrying for long', () => {
  it('is a problem that names the destination, so two mirrors of one connection are told apart', () => {
    const now = Date.now();
    const retrying = passOf(
      {
        retrying: {
          activity: 'mirrorPage',
          attempt: 7,
          type: null,
          reason: 'eventBookings.list: ECONNREFUSED 127.0.0.1:9',
          lastFailedAt: now - 1_000,
          nextAttemptAt: now + 8_000,
          wait: false,
        },
      },
      now,
    );
    const mirror = {
      workflowId: 'mirror-shop-1',
      connectionId: 'shop',
      destination: 'postgres://***@db.example/mirror',
      current: retrying,
      last: null,
      lastCompleted: null,
      connectionGone: null,
    };
    expect(findProblems({ mirrors: [mirror] }).map((p) => p.message)).toEqual([
      'mirror of connection shop into postgres://***@db.example/mirror: retrying: mirrorPage: eventBookings.list: ECONNREFUSED 127.0.0.1:9, attempt 7',
    ]);
  });
});

/** A schedule of shop's mirror as the status lists it, with its last run. */
function scheduleView(
  mode: 'incremental' | 'full',
  run: Pick<NonNullable<ScheduleStatusView['lastRun']>, 'status' | 'error' | 'skipped' | 'waiting'>,
): ScheduleStatusView {
  const scheduleId = `sync-shop-all-${mode}`;
  return {
    scheduleId,
    connectionId: 'shop',
    when: 'every 15m',
    what: 'all',
    mode,
    destination: 'sqlite:/tmp/m.db',
    mirrorWorkflowId: 'mirror-shop-0123456789ab',
    paused: false,
    note: null,
    // Active: Temporal gives it a next run (one with none never runs, a problem of its own).
    nextRunAt: Date.now() + 15 * 60_000,
    lastRun: {
      workflowId: `${scheduleId}-2026-11-28T01:00:00Z`,
      startedAt: Date.now() - 60_000,
      ...run,
      uiUrl: 'http://localhost:8233/namespaces/default/workflows/x',
    },
    uiUrl: `http://localhost:8233/namespaces/default/schedules/${scheduleId}`,
  };
}

/** A status report of one schedule and nothing else. */
function reportOf(schedule: ScheduleStatusView) {
  return {
    generatedAt: Date.now(),
    temporal: { namespace: 'default', taskQueue: 'ebsync', uiUrl: 'http://localhost:8233' },
    connections: [],
    mirrors: [],
    destinations: [],
    schedules: [schedule],
    webhooks: receiverNotRunning('http://127.0.0.1:8790/webhooks/_stats', 'no answer'),
    inbox: { store: 'sqlite:/tmp/store.db', error: null, connections: [] },
    automations: { endpoints: [], error: null },
    rateLimitedLastHour: 0,
    problems: [],
  };
}

describe('a schedule listed twice', () => {
  it('is one problem: Temporal may list a schedule twice while its workflow continues as new', () => {
    // Temporal's schedule list is its visibility store: for a moment a schedule's workflow can
    // have two running records (one continued as new, one not closed in the store yet).
    const schedule = scheduleView('incremental', {
      status: 'failed',
      error: 'mirror pass terminated: stopped by ops',
    });
    expect(findProblems({ schedules: [schedule, { ...schedule }] }).map((p) => p.message)).toEqual([
      'schedule sync-shop-all-incremental: last run failed: mirror pass terminated: stopped by ops',
    ]);
  });

  it('a run that skipped its pass says skipped and why, on the page and in the terminal, and is no problem', () => {
    const reason = 'a mirror of this connection and destination was running (mirror-shop-1)';
    const schedule = scheduleView('full', { status: 'completed', error: null, skipped: reason });
    const report = reportOf(schedule);
    expect(statusText(report)).toMatch(
      new RegExp(`\\n    last run skipped \\([^)]*\\): ${reason.replace(/[()]/g, '\\$&')}\\n`),
    );
    const page = reportHtml(report, new Map(), null);
    expect(page).toContain('>skipped</span>');
    expect(page).toContain(reason);
    expect(findProblems({ schedules: [schedule] })).toEqual([]);
  });

  it('a run waiting behind another pass says waiting and behind which, on the page and in the terminal, and is no problem', () => {
    const behind = 'behind the running pass mirror-shop-1, started by sync-shop-all-full-2026';
    const schedule = scheduleView('incremental', {
      status: 'running',
      error: null,
      waiting: behind,
    });
    const report = reportOf(schedule);
    const text = statusText(report);
    expect(text).toContain('\n    last run waiting (');
    expect(text).toContain(`) ${behind}\n`);
    const page = reportHtml(report, new Map(), null);
    expect(page).toContain('>waiting</span>');
    expect(page).not.toContain('>running</span>');
    expect(page).toContain(behind);
    expect(findProblems({ schedules: [schedule] })).toEqual([]);
  });
});

describe('an active schedule with no next run', () => {
  it('says on the page and in the terminal that it never runs, and is a problem; paused, it is none', () => {
    const ok = scheduleView('full', { status: 'completed', error: null });
    const never = { ...ok, nextRunAt: null };
    const report = { ...reportOf(never), problems: findProblems({ schedules: [never] }) };
    expect(report.problems).toEqual([
      {
        connectionId: 'shop',
        kind: 'schedule_never_runs',
        message:
          "schedule sync-shop-all-full: active but never runs: Temporal finds no date its spec matches; 'ebsync schedule delete sync-shop-all-full' removes it",
      },
    ]);
    expect(statusText(report)).toContain('  sync-shop-all-full  every 15m  next never\n');
    const page = reportHtml(report, new Map(), null);
    expect(page).toContain('<td>never</td>');
    expect(page).toContain('active but never runs');
    expect(findProblems({ schedules: [{ ...never, paused: true }] })).toEqual([]);
    expect(findProblems({ schedules: [ok] })).toEqual([]);
  });
});
