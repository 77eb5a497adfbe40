import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { closedPort } from '../helpers/ports.js';

/**
 * What `ebsync schedule` (and `ebsync status`) refuse from the command line alone, before any call to Temporal:
 * Temporal's address is a port nothing listens on, so a check that came after a call would
 * fail with "cannot reach Temporal" (exit 1) instead of the line asked for (exit 2).
 */
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-schedule-refusals-'));
  env = { EBSYNC_DATA_DIR: dir, TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}` };
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const refused = async (args: readonly string[], message: string): Promise<void> => {
  const result = await runCli(['schedule', ...args], env);
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
  expect(result.stderr).toContain(message);
};

describe('ebsync schedule pause|resume --note', { timeout: 60_000 }, () => {
  it.for([
    ['pause', 'x'.repeat(2000), '--note is 2000 characters'],
    ['resume', 'x'.repeat(1001), '--note is 1001 characters'],
    // Temporal counts bytes: 600 two-byte characters are 1,200 of them.
    ['pause', 'é'.repeat(600), '--note is 600 characters (1200 bytes)'],
  ] as const)('%s with a note over 1,000 bytes: one line, exit 2', async ([verb, note, says]) => {
    await refused([verb, 'sync-x-all-full', '--note', note], says);
    await refused([verb, 'sync-x-all-full', '--note', note], '1000 bytes at most');
  });

  it('lets a note of 1,000 bytes through to Temporal', async () => {
    const result = await runCli(
      ['schedule', 'pause', 'sync-x-all-full', '--note', 'x'.repeat(1000)],
      env,
    );
    // Past the check: this Temporal does not answer.
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain('cannot reach Temporal');
  });
});

describe('ebsync schedule <verb> with an id ebsync never gives', { timeout: 60_000 }, () => {
  it.for(['describe', 'pause', 'resume', 'trigger', 'delete'])(
    '%s BAD ID!: one line naming the form, exit 2',
    async (verb) => {
      await refused([verb, 'BAD ID!'], "schedule id 'BAD ID!' is not allowed");
      await refused([verb, 'Sync-Demo-All-Full'], 'sync-<connection>-<what>-<mode>');
      // The refusal names every character an id of ebsync's may hold.
      await refused([verb, 'sync-demo-all-full-a.b'], "digits, '-', '_' and ','");
    },
  );

  it('lets an id of the form through to Temporal', async () => {
    const result = await runCli(['schedule', 'describe', 'sync-demo-all-incremental'], env);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain('cannot reach Temporal');
  });
});

describe('ebsync schedule create --cron --timezone', { timeout: 60_000 }, () => {
  const FORM =
    "expected five fields, 'minute hour day-of-month month day-of-week', such as '0 3 * * *'";
  it.for([
    [['--cron', '0 0 3 * * *'], `--cron '0 0 3 * * *': it has 6 fields; ${FORM}`],
    [['--cron', '0 0 3 * * * 2030'], 'it has 7 fields'],
    [['--cron', '@daily'], `--cron '@daily': '@daily' is not taken; ${FORM}`],
    [['--cron', '@every 5m'], "'@every' is not taken"],
    [['--cron', 'every tuesday'], `it has 2 fields; ${FORM}`],
    [['--cron', '? * * * *'], "the minute field (1 of 5): '?' is not a number it takes"],
    [['--cron', '0 3 * * L'], "the day of week field (5 of 5): 'L' is not a number or a name"],
    [['--cron', '0 5-1 * * *'], "the hour field (2 of 5): the range '5-1' ends before it starts"],
    [
      ['--cron', '0 3 * * *', '--timezone', 'europe/berlin'],
      "--timezone 'europe/berlin' is not written as the IANA database writes it, and Temporal reads zone names in their exact case only: write it 'Europe/Berlin'",
    ],
    [['--cron', '0 3 * * *', '--timezone', 'utc'], "write it 'UTC'"],
    [['--cron', '0 3 * * *', '--timezone', 'US/PACIFIC'], "write it 'America/Los_Angeles'"],
    [['--cron', '0 3 * * *', '--timezone', '+01:00'], "--timezone '+01:00' is an offset"],
    [
      ['--cron', '0 3 * * *', '--timezone', 'Mars/Base'],
      "--timezone 'Mars/Base' is not a time zone",
    ],
  ] as const)('create %j: one line naming what is allowed, exit 2', async ([args, says]) => {
    await refused(['create', ...args], says);
  });

  it.for([
    ['0 3 * * MON-FRI', 'Europe/Berlin'],
    ['*/15 0-6 1,15 jan,jul sun', 'UTC'],
    ['0 3 * * *', 'Asia/Kolkata'],
    ['0 3 * * *', 'US/Pacific'],
    ['0 3 * * *', 'EST5EDT'],
  ] as const)('lets %j in %s through to Temporal', async ([cron, zone]) => {
    const result = await runCli(['schedule', 'create', '--cron', cron, '--timezone', zone], env);
    // Past the checks: this Temporal does not answer. A valid one created is in schedule.test.ts.
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain('cannot reach Temporal');
  });
});

describe(
  'ebsync schedule create --cron with a TZ that is not an IANA zone name',
  { timeout: 60_000 },
  () => {
    // The machine's zone is the default of --timezone; Intl names none for a POSIX TZ (or the
    // wrong one), and falling back to UTC would fire hours off without a word.
    it.for([
      [
        'UTC+2',
        "this machine's time zone (TZ 'UTC+2') is not an IANA zone name",
        'Etc/GMT+2 is the fixed offset it means, UTC-02:00',
      ],
      [
        '<+03>-3',
        "(TZ '<+03>-3') is not an IANA zone name",
        'Etc/GMT-3 is the fixed offset it means, UTC+03:00',
      ],
      [
        'CET-1CEST,M3.5.0,M10.5.0/3',
        "(TZ 'CET-1CEST,M3.5.0,M10.5.0/3') is not an IANA zone name",
        'give --timezone',
      ],
    ] as const)('TZ %s: one line, exit 2', async ([tz, says, also]) => {
      const result = await runCli(['schedule', 'create', '--cron', '0 3 * * *'], {
        ...env,
        TZ: tz,
      });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain(says);
      expect(result.stderr).toContain(also);
      expect(result.stderr).toContain('set TZ to an IANA name');
    });

    it.for([
      [{ TZ: 'UTC+2' }, ['--timezone', 'Europe/Berlin']],
      [{ TZ: 'Europe/Berlin' }, []],
      [{ TZ: ':Europe/Berlin' }, []],
      [{ TZ: 'EST5EDT' }, []],
      // UTC to the C library (and to Node's clock), though ICU names no zone for it.
      [{ TZ: '' }, []],
    ] as const)('lets TZ %j with %j through to Temporal', async ([tz, args]) => {
      const result = await runCli(['schedule', 'create', '--cron', '0 3 * * *', ...args], {
        ...env,
        ...tz,
      });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain('cannot reach Temporal');
    });
  },
);

describe('ebsync schedule create --every --jitter', { timeout: 60_000 }, () => {
  it.for([
    ['15m', '2h', '--jitter 2h is not shorter than --every 15m'],
    ['1h', '1h', '--jitter 1h is not shorter than --every 1h'],
  ] as const)('every %s with jitter %s: one line, exit 2', async ([every, jitter, says]) => {
    await refused(
      ['create', 'leads', '--connection', 'shop', '--every', every, '--jitter', jitter],
      says,
    );
  });

  it('lets a jitter shorter than the interval through to Temporal', async () => {
    const result = await runCli(
      ['schedule', 'create', 'leads', '--connection', 'shop', '--every', '1h', '--jitter', '5m'],
      env,
    );
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain('cannot reach Temporal');
  });
});

describe('ebsync schedule create --cron --jitter', { timeout: 60_000 }, () => {
  // The shortest gap between two firings, on the clock: within an hour, across midnight, and
  // between the days of a day-of-month-or-day-of-week cron (a Monday, then a 1st on Tuesday).
  it.for([
    [
      '0 * * * *',
      '1h',
      "--jitter 1h is not shorter than the shortest gap between firings of --cron '0 * * * *', 1h",
    ],
    ['*/15 * * * *', '20m', 'the shortest gap between firings of --cron'],
    ['0,10 3 * * *', '15m', "--cron '0,10 3 * * *', 10m"],
    ['55 23 * * *', '24h', "--cron '55 23 * * *', 24h"],
    ['0,55 0,23 * * *', '5m', "--cron '0,55 0,23 * * *', 5m"],
    ['0 3 1 * mon', '24h', "--cron '0 3 1 * mon', 24h"],
    ['0 3 * * 1-5', '24h', "--cron '0 3 * * 1-5', 24h"],
  ] as const)('cron %j with jitter %s: one line, exit 2', async ([cron, jitter, says]) => {
    await refused(
      [
        'create',
        'leads',
        '--connection',
        'shop',
        '--cron',
        cron,
        '--timezone',
        'UTC',
        '--jitter',
        jitter,
      ],
      says,
    );
    await refused(
      [
        'create',
        'leads',
        '--connection',
        'shop',
        '--cron',
        cron,
        '--timezone',
        'UTC',
        '--jitter',
        jitter,
      ],
      "each firing's delay must stay shorter than that gap; give a shorter --jitter",
    );
  });

  it.for([
    ['0 3 * * *', '5m'],
    ['0,10 3 * * *', '9m'],
    ['0 3 * * 1-5', '23h'],
  ] as const)('lets cron %j with jitter %s through to Temporal', async ([cron, jitter]) => {
    const result = await runCli(
      [
        'schedule',
        'create',
        'leads',
        '--connection',
        'shop',
        '--cron',
        cron,
        '--timezone',
        'UTC',
        '--jitter',
        jitter,
      ],
      env,
    );
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain('cannot reach Temporal');
  });
});

describe('ebsync status --serve --json', { timeout: 60_000 }, () => {
  it('is refused in one line, exit 2: the page serves its JSON at /status.json', async () => {
    const result = await runCli(['status', '--serve', '--json'], env);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([
      'ebsync: --serve and --json do not go together: --serve serves the page (its JSON is at /status.json), --json prints the report once',
    ]);
  });
});

describe('error lines echo what was given safely', () => {
  it('writes control characters as \\xNN and cuts a very long value', async () => {
    const escape = await runCli(['schedule', 'create', '--cron', '0 3 * * *\u001b[31m'], env);
    expect(escape.code).toBe(2);
    expect(escape.stderr).toContain("--cron '0 3 * * *\\x1b[31m'");
    expect(escape.stderr).not.toContain('\u001b');
    expect(escape.stderr.trimEnd().split('\n')).toHaveLength(1);
    // A newline inside the value: still one line, the newline shown as \x0a.
    const split = await runCli(['schedule', 'create', '--cron', '0 3 * * *\nx'], env);
    expect(split.code).toBe(2);
    expect(split.stderr.trimEnd().split('\n')).toEqual([
      expect.stringContaining("--cron '0 3 * * *\\x0ax': it has 6 fields"),
    ]);
    // Commander's own refusals echo the argument too.
    const parsed = await runCli(['temporal', '--namespace', 'x\u001b[31m'], env);
    expect(parsed.code).toBe(2);
    expect(parsed.stderr).toContain("argument 'x\\x1b[31m' is invalid");
    expect(parsed.stderr).not.toContain('\u001b');
    const long = await runCli(['schedule', 'create', '--cron', '1 '.repeat(2_500)], env);
    expect(long.code).toBe(2);
    expect(long.stderr).toMatch(/… \(\d+ more characters\)\n$/);
    expect(long.stderr.length).toBeLessThan(2_100);
  });
});
