import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { sqliteAutomationStore } from '../../store/automation-endpoints.js';
import { dataConverter } from '../../worker/data-converter.js';
import { receiverStatsToken } from '../../worker/receiver-stats-token.js';
import { ensureChromium } from '../helpers/chromium.js';
import { CliProcess, freePort, REPO_ROOT, runCli } from '../helpers/cli.js';
import { hintBody, post, standardHeaders } from '../webhooks/deliveries.js';

/**
 * The schedules and webhook receiver sections of the status page (Debian's Chromium through
 * playwright-core) and of `ebsync status`, against a real worker, schedules on the real dev
 * server and a real `ebsync webhooks serve`.
 */
const ADMIN_TOKEN = 'status-sections-admin-token-0123456789';
const SHOP = 'status-sections-shop';
const SCHEDULE = `sync-${SHOP}-all-incremental`;
const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');

let dir: string;
let sb: Sandbox;
let worker: CliProcess;
let server: CliProcess;
let receiver: CliProcess | undefined;
let browser: Browser;
let page: Page;
let url: string;
let env: Record<string, string>;
let connection: Connection;
let client: Client;

interface StatusJson {
  connections: {
    connectionId: string;
    state: string;
    rateLimited: { lastHour: number; perMinute: [number, number][] };
  }[];
  rateLimitedLastHour: number;
  automations: {
    endpoints: {
      name: string;
      url: string;
      state: string;
      failures: number;
      openUntil: string | null;
    }[];
    error: string | null;
  };
  mirrors: {
    workflowId: string;
    connectionId: string;
    current: { runId: string } | null;
    last: { runId: string; status: string; progress: { destination: string } | null } | null;
    lastCompleted: { runId: string; status: string } | null;
  }[];
  schedules: {
    scheduleId: string;
    paused: boolean;
    lastRun: { workflowId: string; status: string; startedAt: number } | null;
  }[];
  webhooks: { running: boolean; delivered: number; rejected: number };
  inbox: {
    store: string;
    error: string | null;
    connections: { connectionId: string; pending: number; drainedLastMinute: number }[];
  };
  problems: { connectionId: string; kind: string; message: string }[];
}

/**
 * The report as a monitor reads it. After a background refresh that failed (on a loaded
 * machine, a Temporal call past its deadline) the page answers 503 with the last report marked
 * stale and a Retry-After, until a refresh succeeds: waited out as a monitor would, a few times.
 */
async function statusJson(): Promise<StatusJson> {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(new URL('status.json', url));
    const text = await res.text();
    const stale = res.status === 503 && (JSON.parse(text) as { stale?: unknown }).stale;
    if (stale && attempt < 10) {
      await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after') ?? 2) * 1000));
      continue;
    }
    // A failure says why, and the page's own log with it.
    expect(res.status, `${text.slice(-1500)}; the page's log: ${server.stderr.slice(-1500)}`).toBe(
      200,
    );
    return JSON.parse(text) as StatusJson;
  }
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** What Temporal says, through the same command a user would run. */
async function pausedInTemporal(): Promise<boolean> {
  const described = await runCli(['schedule', 'describe', SCHEDULE, '--json'], env);
  expect(described.code, described.stderr).toBe(0);
  return (JSON.parse(described.stdout) as { paused: boolean }).paused;
}

const connectionState = async () =>
  (await statusJson()).connections.find((c) => c.connectionId === SHOP)?.state;

const actionResult = () => page.textContent('[data-testid="action-result"]');

beforeAll(async () => {
  const executablePath = ensureChromium();
  dir = mkdtempSync(join(tmpdir(), 'ebsync-status-sections-'));
  mkdirSync(ARTIFACTS, { recursive: true });
  sb = await startSandbox({ certDir: join(dir, 'cert'), seed: { leads: 400, events: 20 } });
  env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `status-sections-${Date.now()}`,
    EBS_BASE_URL: sb.baseUrl,
    EBS_API_KEY: sb.apiKey,
    EBS_CA_FILE: sb.caFile ?? '',
    EBS_PAGE_SIZE: '10',
    EBSYNC_MIRROR_CONCURRENCY: '1',
    EBSYNC_DATA_DIR: join(dir, 'data'),
    EBSYNC_ADMIN_TOKEN: ADMIN_TOKEN,
    EBSYNC_STATUS_PORT: '0',
    EBSYNC_WEBHOOK_PORT: String(await freePort()),
  };
  connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS! });
  client = new Client({ connection });
  worker = new CliProcess(['worker'], env);
  await worker.waitForLine(/worker started/, 90_000);
  const ok = await runCli(['connect', '--api-key', '--name', SHOP], env);
  expect(ok.code, ok.stderr).toBe(0);
  server = new CliProcess(['status', '--serve'], env);
  const line = await server.waitForLine(/^Status page: http/, 60_000);
  url = /(http:\/\/\S+)/.exec(line)![1]!;
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
}, 240_000);

afterAll(async () => {
  await client?.schedule
    .getHandle(SCHEDULE)
    .delete()
    .catch(() => undefined);
  await browser?.close();
  await receiver?.stop('SIGTERM', 30_000);
  await server?.stop('SIGTERM', 30_000);
  await worker?.stop('SIGTERM', 30_000);
  await connection?.close();
  await sb?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the status page, schedules and connections', () => {
  it('shows a created schedule, and pauses and resumes it with the token only', async () => {
    const created = await runCli(
      ['schedule', 'create', '--every', '1h', '--connection', SHOP],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    await page.goto(url);
    const row = page.locator(`[data-testid="schedule-${SCHEDULE}"]`);
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toMatch(/every 1h/);
    expect(await row.getAttribute('data-paused')).toBe('false');
    const pause = row.locator('button[data-action="pause"]');

    await pause.click();
    await expect.poll(actionResult, { timeout: 15_000 }).toMatch(/Refused \(401\)/);
    const refused = await fetch(new URL(`api/schedules/${SCHEDULE}/pause`, url), {
      method: 'POST',
    });
    expect(refused.status).toBe(401);
    expect(await pausedInTemporal()).toBe(false);

    await page.fill('#token', ADMIN_TOKEN);
    await pause.click();
    await expect.poll(actionResult, { timeout: 15_000 }).toMatch(new RegExp(`paused ${SCHEDULE}`));
    expect(await pausedInTemporal()).toBe(true);
    await expect.poll(() => row.getAttribute('data-paused'), { timeout: 10_000 }).toBe('true');
    await page.screenshot({ path: join(ARTIFACTS, 'status-schedule-paused.png'), fullPage: true });

    await row.locator('button[data-action="resume"]').click();
    await expect.poll(actionResult, { timeout: 15_000 }).toMatch(new RegExp(`resumed ${SCHEDULE}`));
    expect(await pausedInTemporal()).toBe(false);
    const text = await runCli(['status'], env);
    expect(text.stdout).toMatch(new RegExp(`${SCHEDULE}  every 1h  next `));
  }, 120_000);

  it('pauses and resumes a connection from the page', async () => {
    await page.goto(url);
    await page.fill('#token', ADMIN_TOKEN);
    const row = page.locator(`[data-testid="connection-${SHOP}"]`);
    await row.locator('button[data-action="pause"]').click();
    await expect.poll(actionResult, { timeout: 40_000 }).toMatch(new RegExp(`paused: ${SHOP}`));
    // The action answers once a report shows its change (the update takes up to 10 s, the
    // report up to 20 s more on a loaded machine), so the very next read shows it: a report
    // begun before the change, and joined, would show the old state for seconds.
    expect(await connectionState()).toBe('paused');
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toMatch(/paused/);
    const listed = await runCli(['connections', '--json'], env);
    expect(listed.stdout).toMatch(/"state": "paused"/);
    await row.locator('button[data-action="resume"]').click();
    await expect.poll(actionResult, { timeout: 40_000 }).toMatch(new RegExp(`resumed: ${SHOP}`));
    expect(await connectionState()).toBe('active');
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toMatch(/active/);
  }, 150_000);
});

describe('the status page, webhook receiver', () => {
  it('says the receiver is not running, then shows its counts after signed deliveries', async () => {
    expect((await statusJson()).webhooks.running).toBe(false);
    const registered = await runCli(
      ['webhooks', 'register', SHOP, '--sandbox-admin', `${sb.url}/admin`],
      { ...env, EBS_SANDBOX_ADMIN_TOKEN: sb.adminToken },
    );
    expect(registered.code, registered.stderr).toBe(0);
    // Registered, and no receiver to take the deliveries: a problem, named.
    await until(
      'the missing receiver as a problem',
      async () =>
        (await statusJson()).problems.find((p) => p.kind === 'webhook_receiver_down') ?? undefined,
      30_000,
    );
    const secret = sb.admin.webhooks()[0]!.secret;
    receiver = new CliProcess(['webhooks', 'serve'], env);
    await receiver.waitForLine(/webhook receiver listening/, 60_000);
    const endpoint = `http://127.0.0.1:${env.EBSYNC_WEBHOOK_PORT}/webhooks/${SHOP}`;
    // A forged delivery, then the sender's own: the refusal was a guess of someone else's,
    // not a sender signing with another secret (no webhook_signatures_refused problem).
    const forged = hintBody('msg_status_forged', 'lead', 4);
    const wrongSecret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
    expect(
      (await post(endpoint, forged, standardHeaders(wrongSecret, 'msg_status_forged', forged)))
        .status,
    ).toBe(401);
    for (const n of [1, 2, 3]) {
      const body = hintBody(`msg_status_${n}`, 'lead', n);
      const sent = await post(endpoint, body, standardHeaders(secret, `msg_status_${n}`, body));
      expect(sent.status).toBe(200);
    }

    await page.goto(url);
    const section = page.locator('[data-testid="webhooks"]');
    await expect.poll(() => section.getAttribute('data-delivered'), { timeout: 15_000 }).toBe('3');
    expect(await section.getAttribute('data-rejected')).toBe('1');
    expect(await section.textContent()).toMatch(/3 delivered, 1 rejected/);
    expect(await section.locator('svg.chart').count()).toBe(1);
    expect(await page.content()).not.toContain(secret);
    await page.screenshot({ path: join(ARTIFACTS, 'status-webhooks.png'), fullPage: true });
    // The counters need the token derived from the encryption keys (a proxy on this host
    // would make any caller loopback).
    const statsUrl = `http://127.0.0.1:${env.EBSYNC_WEBHOOK_PORT}/webhooks/_stats`;
    expect((await fetch(statsUrl)).status).toBe(404);
    const token = receiverStatsToken(loadConfig(env));
    const stats = await fetch(statsUrl, { headers: { authorization: `Bearer ${token}` } });
    expect(stats.status).toBe(200);

    // The worker's drain applied the three notices: the inbox says so, on the page and in the
    // terminal.
    const drained = async () =>
      (await statusJson()).inbox.connections.find((c) => c.connectionId === SHOP);
    await expect
      .poll(async () => (await drained())?.drainedLastMinute ?? 0, { timeout: 60_000 })
      .toBeGreaterThanOrEqual(3);
    expect((await drained())?.pending).toBe(0);
    await page.goto(url);
    const inbox = page.locator(`[data-testid="inbox"] tr[data-connection="${SHOP}"]`);
    expect(await inbox.getAttribute('data-pending')).toBe('0');
    const text = await runCli(['status'], env);
    expect(text.stdout).toMatch(
      new RegExp(
        `Webhook inbox \\(sqlite:.*store\\.db\\)\\n  ${SHOP}  0 pending, \\d+ drained in the last minute`,
      ),
    );
  }, 120_000);
});

describe('the status page, automation endpoints', () => {
  it('shows each endpoint with its breaker state, an open breaker as such, and never a secret', async () => {
    expect((await statusJson()).automations).toEqual({ endpoints: [], error: null });
    const added: string[] = [];
    for (const [name, hook] of [
      ['hook-up', 'http://127.0.0.1:9/hooks/up-path-token-1111'],
      ['hook-down', 'http://127.0.0.1:9/hooks/down-path-token-2222'],
    ] as const) {
      const result = await runCli(['webhooks', 'endpoints', 'add', name, hook], env);
      expect(result.code, result.stderr).toBe(0);
      added.push(/(whsec_\S+)/.exec(result.stdout)![1]!);
    }
    // What the forwarder records when hook-down keeps failing: the breaker opens for 10 min,
    // in the same webhooks.db (and with the same key) the workers use.
    const config = loadConfig(env);
    const store = sqliteAutomationStore(
      join(config.dataDir, 'webhooks.db'),
      dataConverter(config).payloadCodecs![0]!,
    );
    try {
      store.failed('hook-down', Date.now(), 3, 600_000);
      store.failed('hook-down', Date.now(), 3, 600_000);
      store.failed('hook-down', Date.now(), 3, 600_000);
    } finally {
      store.close();
    }

    await page.goto(url);
    const down = page.locator('[data-testid="endpoint-hook-down"]');
    await expect
      .poll(() => down.getAttribute('data-state'), { timeout: 15_000 })
      .toBe('breaker open');
    expect(await down.textContent()).toMatch(/breaker open until \d{4}-\d\d-\d\dT/);
    expect(await page.getAttribute('[data-testid="endpoint-hook-up"]', 'data-state')).toBe(
      'active',
    );
    const html = await page.content();
    for (const secret of [...added, 'up-path-token-1111', 'down-path-token-2222']) {
      expect(html).not.toContain(secret);
    }
    await page.screenshot({ path: join(ARTIFACTS, 'status-automations.png'), fullPage: true });

    const json = await runCli(['status', '--json'], env);
    const report = JSON.parse(json.stdout) as StatusJson;
    expect(report.automations.endpoints.map((e) => [e.name, e.state, e.failures])).toEqual([
      ['hook-down', 'breaker open', 3],
      ['hook-up', 'active', 0],
    ]);
    expect(report.automations.endpoints[0]!.url).toBe('http://127.0.0.1:9/…');
    for (const secret of [...added, 'down-path-token-2222'])
      expect(json.stdout).not.toContain(secret);
    const text = await runCli(['status'], env);
    expect(text.stdout).toMatch(
      /hook-down {2}http:\/\/127\.0\.0\.1:9\/… {2}breaker open until \S+ {2}failures in a row: 3/,
    );
    expect(text.stdout).toMatch(/hook-up .* active /);
    // An open breaker is the endpoint's state, not the deployment's health.
    expect(text.code, text.stderr).toBe(0);
    for (const name of ['hook-up', 'hook-down']) {
      await runCli(['webhooks', 'endpoints', 'remove', name], env);
    }
  }, 120_000);
});

describe('the status page, 429s', () => {
  it('counts the rate-limit refusals a mirror met over the last hour, charted beside its records/s', async () => {
    const before = (await statusJson()).connections.find((c) => c.connectionId === SHOP);
    expect(before?.rateLimited.lastHour).toBe(0);
    const refusedBefore = sb.admin.counters().rate_limited;
    // Slower and far stricter than the worker's pace (EBS_RATE_LIMIT 10/s): refusals follow.
    sb.admin.setFaults({ latencyMs: 100 });
    sb.admin.setRateLimit({ perSecond: 1 });
    try {
      await page.goto(url);
      await page.fill('#token', ADMIN_TOKEN);
      await page.click(`button[data-action="sync"][data-connection="${SHOP}"]`);
      await expect
        .poll(actionResult, { timeout: 15_000 })
        .toMatch(/started the mirror|already running/);
      const chart = page.locator(`[data-testid="mirror-${SHOP}"] [data-testid="limited-${SHOP}"]`);
      await expect
        .poll(
          async () =>
            Number(
              (await chart.getAttribute('data-count', { timeout: 1_000 }).catch(() => null)) ?? 0,
            ),
          {
            timeout: 90_000,
          },
        )
        .toBeGreaterThan(0);
      expect(await chart.locator('svg.chart').count()).toBe(1);
      expect(await chart.textContent()).toMatch(/429s, last hour: [1-9]/);
      await page.screenshot({ path: join(ARTIFACTS, 'status-429s.png'), fullPage: true });
    } finally {
      sb.admin.setRateLimit({ perSecond: 0 });
      sb.admin.setFaults({ latencyMs: 0 });
    }
    // The pass finishes once the service lets it; the count stays for the hour.
    const done = await until(
      'the pass to complete',
      async () => {
        const report = await statusJson();
        const m = report.mirrors.find((x) => x.connectionId === SHOP);
        return m && !m.current && m.last?.status === 'completed' ? report : undefined;
      },
      120_000,
    );
    const refused = sb.admin.counters().rate_limited - refusedBefore;
    const counted = done.connections.find((c) => c.connectionId === SHOP)!.rateLimited;
    // Each refusal that turned an activity attempt away, at most one per attempt.
    expect(counted.lastHour).toBeGreaterThan(0);
    expect(counted.lastHour).toBeLessThanOrEqual(refused);
    expect(counted.perMinute.reduce((sum, [, n]) => sum + n, 0)).toBe(counted.lastHour);
    expect(done.rateLimitedLastHour).toBe(counted.lastHour);

    await page.goto(url);
    expect(await page.getAttribute('[data-testid="limited-total"]', 'data-count')).toBe(
      String(counted.lastHour),
    );
    const text = await runCli(['status'], env);
    expect(text.stdout).toContain(`429s last hour: ${counted.lastHour}`);
    // One connection: its count is the total, said once.
    expect(text.stdout.match(/429s last hour/g)).toHaveLength(1);
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as StatusJson;
    expect(json.rateLimitedLastHour).toBe(counted.lastHour);
  }, 300_000);
});

describe('ebsync status, failures', () => {
  it('exits 1 naming the connection whose last pass was terminated and the schedule whose run was', async () => {
    // Not near the schedule's own hourly run (on the hour, UTC): one started just before the
    // click holds the triggered run back until it ends (the incremental schedule buffers one),
    // and with the answers slowed below it would not end within the wait for this click's
    // run. Near the hour, the test waits until that run has come and gone.
    await until(
      'a time when the schedule has no run going or due',
      async () => {
        const described = await runCli(['schedule', 'describe', SCHEDULE, '--json'], env);
        expect(described.code, described.stderr).toBe(0);
        const { nextRuns, running } = JSON.parse(described.stdout) as {
          nextRuns: string[];
          running: string[];
        };
        const next = nextRuns[0] ? Date.parse(nextRuns[0]) : Number.POSITIVE_INFINITY;
        return running.length === 0 && next - Date.now() > 120_000 ? true : undefined;
      },
      240_000,
    );
    // Slow enough that the pass cannot finish before both terminations below, however long
    // the healthy `ebsync status` takes on a loaded machine (at 150 ms an incremental pass
    // once ended first, and there was no run left to terminate).
    sb.admin.setFaults({ latencyMs: 5_000 });
    await page.goto(url);
    await page.fill('#token', ADMIN_TOKEN);
    const clicked = Date.now();
    await page.click(`[data-testid="schedule-${SCHEDULE}"] button[data-action="trigger"]`);
    await expect
      .poll(actionResult, { timeout: 15_000 })
      .toMatch(new RegExp(`triggered ${SCHEDULE}`));
    // This click's run, running: the schedule's own hourly run may have started just before
    // (on the hour) and hold the triggered one back until it ends; terminating that one
    // would let this click's run start and complete after it.
    const running = await until(
      'the scheduled run and its mirror',
      async () => {
        const report = await statusJson();
        const run = report.schedules.find((s) => s.scheduleId === SCHEDULE)?.lastRun;
        const mirror = report.mirrors.find((m) => m.connectionId === SHOP && m.current);
        return run && run.startedAt >= clicked && run.status === 'running' && mirror
          ? { run, mirror }
          : undefined;
      },
      60_000,
    );
    const healthyBefore = await runCli(['status'], env);
    expect(healthyBefore.code, healthyBefore.stderr).toBe(0);

    // The schedule's run first: the mirror it started outlives it (ABANDON).
    await client.workflow.getHandle(running.run.workflowId).terminate('status test');
    await client.workflow.getHandle(running.mirror.workflowId).terminate('status test');
    sb.admin.setFaults({ latencyMs: 0 });

    // What the last try printed goes into the timeout's message: a failure must say why.
    let lastTry = 'no run of ebsync status finished';
    const failed = await until(
      'both problems',
      async () => {
        const result = await runCli(['status'], env);
        lastTry = `exit ${result.code}; stderr: ${result.stderr.trim() || '(empty)'}; stdout: ${result.stdout.slice(0, 2_000)}`;
        return result.code === 1 && /schedule .*last run/.test(result.stdout) ? result : undefined;
      },
      120_000,
    ).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; the last try: ${lastTry}`);
    });
    // The report ends with each problem, once; stderr says there are some (not each again).
    const mirrorProblem = new RegExp(
      `^  mirror of connection ${SHOP} into \\S+: last pass terminated`,
      'gm',
    );
    const scheduleProblem = new RegExp(`^  schedule ${SCHEDULE}: last run terminated`, 'gm');
    expect(failed.stdout.match(mirrorProblem)).toHaveLength(1);
    expect(failed.stdout.match(scheduleProblem)).toHaveLength(1);
    expect(failed.stderr).toMatch(/^ebsync: \d+ problems, listed at the end of the report\n$/);
    // The terminated pass says where it wrote and how far it got (a worker replays it), and
    // the completed pass before it stays in view.
    const report = JSON.parse((await runCli(['status', '--json'], env)).stdout) as StatusJson;
    const mirror = report.mirrors.find((m) => m.workflowId === running.mirror.workflowId);
    expect(mirror?.last?.status).toBe('terminated');
    expect(mirror?.last?.progress?.destination).toMatch(/^sqlite:/);
    expect(mirror?.lastCompleted?.status).toBe('completed');
    expect(failed.stdout).toMatch(/^ {4}last {4}terminated since .*\n {12}terminated while \w+: /m);
    expect(failed.stdout).toMatch(/^ {4}before {2}completed since /m);
    await page.goto(url);
    await expect
      .poll(() => page.textContent('[data-testid="health"]'), { timeout: 10_000 })
      .toMatch(/need attention/);
    expect(
      await page.getAttribute(
        `[data-testid="mirror-${SHOP}"] [data-testid="pass-before"]`,
        'data-status',
      ),
    ).toBe('completed');
    await page.screenshot({ path: join(ARTIFACTS, 'status-failures.png'), fullPage: true });
  }, 480_000);
});
