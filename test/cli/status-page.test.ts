import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadingHtml, pageHtml } from '../../cli/status-page.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { ensureChromium } from '../helpers/chromium.js';
import { CliProcess, freePort, REPO_ROOT, runCli } from '../helpers/cli.js';

/**
 * The status page in a real browser (Debian's Chromium through playwright-core), served by
 * `ebsync status --serve` beside a real worker, and `ebsync status` in the terminal.
 */
const ADMIN_TOKEN = 'status-page-admin-token-0123456789';
const HEALTHY = 'status-page-ok';
const BROKEN = 'status-page-revoked';
const SECOND = 'status-page-second';
const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');

let dir: string;
let sb: Sandbox;
let worker: CliProcess;
let server: CliProcess;
let browser: Browser;
let page: Page;
let url: string;
let env: Record<string, string>;

interface StatusJson {
  connections: { connectionId: string; state: string }[];
  mirrors: {
    connectionId: string;
    current: { progress: { counts: { read: number } } | null } | null;
    last: { status: string } | null;
  }[];
  problems: { connectionId: string; kind: string; message: string }[];
}

async function statusJson(): Promise<StatusJson> {
  const res = await fetch(new URL('status.json', url));
  expect(res.status).toBe(200);
  return (await res.json()) as StatusJson;
}

/** A connection made with a key of its own, given on stdin; the key, to revoke. */
async function connectWithNewKey(name: string) {
  const key = sb.admin.createKey({ name });
  const connect = await runCli(['connect', '--api-key', '-', '--name', name], env, 90_000, key.key);
  expect(connect.code, connect.stderr).toBe(0);
  return key;
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

beforeAll(async () => {
  const executablePath = ensureChromium();
  dir = mkdtempSync(join(tmpdir(), 'ebsync-status-page-'));
  mkdirSync(ARTIFACTS, { recursive: true });
  sb = await startSandbox({ certDir: join(dir, 'cert'), seed: { leads: 400, events: 20 } });
  env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `status-page-${Date.now()}`,
    EBS_BASE_URL: sb.baseUrl,
    EBS_API_KEY: sb.apiKey,
    EBS_CA_FILE: sb.caFile ?? '',
    EBS_PAGE_SIZE: '10',
    EBSYNC_MIRROR_CONCURRENCY: '1',
    EBSYNC_DATA_DIR: join(dir, 'data'),
    EBSYNC_ADMIN_TOKEN: ADMIN_TOKEN,
    EBSYNC_STATUS_PORT: '0',
    // No receiver listens here, whatever else runs on this machine.
    EBSYNC_WEBHOOK_PORT: String(await freePort()),
  };
  worker = new CliProcess(['worker'], env);
  await worker.waitForLine(/worker started/, 90_000);
  const ok = await runCli(['connect', '--api-key', '--name', HEALTHY], env);
  expect(ok.code, ok.stderr).toBe(0);
  server = new CliProcess(['status', '--serve'], env);
  const line = await server.waitForLine(/^Status page: http/, 60_000);
  url = /(http:\/\/\S+)/.exec(line)![1]!;
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop('SIGTERM', 30_000);
  await worker?.stop('SIGTERM', 30_000);
  await sb?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the status page', () => {
  it('loads on loopback with the connection, health, no schedules and no webhook receiver', async () => {
    expect(new URL(url).hostname).toBe('127.0.0.1');
    await page.goto(url);
    await expect
      .poll(() => page.textContent(`[data-testid="connection-${HEALTHY}"]`))
      .toMatch(/active/);
    expect(await page.textContent('[data-testid="health"]')).toMatch(/All healthy/);
    expect(await page.textContent('[data-testid="schedules"]')).toMatch(/None/);
    expect(await page.textContent('[data-testid="webhooks"]')).toMatch(/Not running/);
    const html = await page.content();
    expect(html).not.toContain(sb.apiKey);
    expect(html).not.toContain(ADMIN_TOKEN);
    await page.screenshot({ path: join(ARTIFACTS, 'status-page-loaded.png'), fullPage: true });
  });

  it('refuses to start a sync without the admin token, and with a wrong one', async () => {
    await page.goto(url);
    const sync = page.locator(`button[data-action="sync"][data-connection="${HEALTHY}"]`);
    await sync.click();
    await expect.poll(() => page.textContent('[data-testid="action-result"]')).toMatch(/401/);
    await page.fill('#token', 'not-the-admin-token-at-all');
    await sync.click();
    await expect.poll(() => page.textContent('[data-testid="action-result"]')).toMatch(/403/);
    await page.screenshot({ path: join(ARTIFACTS, 'status-page-refused.png'), fullPage: true });
    expect((await statusJson()).mirrors).toEqual([]);
    const res = await fetch(new URL(`api/connections/${HEALTHY}/sync`, url), { method: 'POST' });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ meta: { status: 'error' }, status: 'unauthorized' });
  });

  it('starts a sync with the token and shows its progress advancing until it completes', async () => {
    // Slow answers make a pass long enough to watch: 40 lead pages at a second each, against
    // a page and a report that each refresh every 2 s. At 150 ms a loaded machine once showed
    // the pass only after it had ended, and no count was seen to grow.
    sb.admin.setFaults({ latencyMs: 1_000 });
    await page.goto(url);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click(`button[data-action="sync"][data-connection="${HEALTHY}"]`);
    // The answer comes after the checks a sync makes (a worker polls, the connection is
    // active, the destination opens): longer than poll's 1 s default on a loaded machine.
    await expect
      .poll(() => page.textContent('[data-testid="action-result"]'), { timeout: 30_000 })
      .toMatch(/started the mirror/);
    const readOnPage = async (): Promise<number | undefined> => {
      const value = await page
        .locator('[data-testid="read-current"]')
        .getAttribute('data-read', { timeout: 1_000 })
        .catch(() => null);
      return value === null ? undefined : Number(value);
    };
    const first = await until(
      'a first progress count',
      async () => {
        const n = await readOnPage();
        return n !== undefined && n > 0 ? n : undefined;
      },
      60_000,
    );
    await page.screenshot({ path: join(ARTIFACTS, 'status-page-progress.png'), fullPage: true });
    const later = await until(
      'the count to grow',
      async () => {
        const n = await readOnPage();
        return n !== undefined && n > first ? n : undefined;
      },
      60_000,
    );
    expect(later).toBeGreaterThan(first);
    sb.admin.setFaults({ latencyMs: 0 });
    await until(
      'the pass to complete',
      async () => {
        const mirror = (await statusJson()).mirrors.find((m) => m.connectionId === HEALTHY);
        return mirror?.last?.status === 'completed' && !mirror.current ? mirror : undefined;
      },
      180_000,
    );
    await expect
      .poll(() => page.textContent(`[data-testid="mirror-${HEALTHY}"]`), { timeout: 10_000 })
      .toMatch(/completed/);
    await page.screenshot({ path: join(ARTIFACTS, 'status-page-completed.png'), fullPage: true });
  }, 300_000);

  // The default destination is the healthy connection's now (the pass above): `ebsync sync`
  // refuses a second connection into it in one line, and the page's button said "started" and
  // let the pass fail in the worker.
  it("refuses a sync into another connection's destination up front, with the CLI's line", async () => {
    await connectWithNewKey(SECOND);
    const cli = await runCli(['sync', '--connection', SECOND], env, 60_000);
    expect(cli.code).toBe(1);
    const line = cli.stderr.replace(/^ebsync: /, '').trim();
    expect(line).toContain(`already holds the records of connection ${HEALTHY}`);
    await page.goto(url);
    await page.fill('#token', ADMIN_TOKEN);
    const sync = page.locator(`button[data-action="sync"][data-connection="${SECOND}"]`);
    await sync.click({ timeout: 30_000 });
    await expect
      .poll(() => page.textContent('[data-testid="action-result"]'), { timeout: 30_000 })
      .toBe(`Refused (409): ${line}`);
    expect((await statusJson()).mirrors.map((m) => m.connectionId)).not.toContain(SECOND);
    await page.screenshot({ path: join(ARTIFACTS, 'status-page-claimed.png'), fullPage: true });
  }, 180_000);
});

describe('the page before its first report', () => {
  /** Serves the page as the status server does before it has a report, with a given /fragment. */
  async function servePage(fragment: (reply: FastifyReply) => Promise<unknown>): Promise<string> {
    const app = Fastify({ logger: false });
    app.get('/', async (_request, reply) =>
      reply.type('text/html; charset=utf-8').send(pageHtml(loadingHtml())),
    );
    app.get('/fragment', async (_request, reply) => fragment(reply));
    apps.push(app);
    return app.listen({ host: '127.0.0.1', port: 0 });
  }
  const apps: FastifyInstance[] = [];
  afterAll(async () => {
    for (const app of apps) await app.close();
  });

  it('says it is reading, then shows the report when it comes', async () => {
    const base = await servePage(async (reply) => {
      await new Promise((r) => setTimeout(r, 300));
      return reply.type('text/html').send('<p data-testid="health">All healthy.</p>');
    });
    await page.goto(base);
    expect(await page.textContent('[data-testid="loading"]')).toMatch(/Reading the status/);
    await expect
      .poll(() => page.textContent('[data-testid="health"]'), { timeout: 10_000 })
      .toMatch(/All healthy/);
  });

  it('names why when the first report cannot be read', async () => {
    const base = await servePage(async (reply) =>
      reply.code(503).send({ message: 'the status could not be read: Temporal is down' }),
    );
    await page.goto(base);
    await expect
      .poll(() => page.textContent('[data-testid="loading"]'), { timeout: 10_000 })
      .toMatch(/could not be read: Temporal is down/);
  });
});

describe('ebsync status', () => {
  it('exits 0 when all is healthy, and 1 naming a connection that needs re-authorization', async () => {
    const healthy = await runCli(['status'], env);
    expect(healthy.code, healthy.stderr).toBe(0);
    expect(healthy.stdout).toMatch(/All healthy/);
    expect(healthy.stdout).toContain(HEALTHY);
    expect(healthy.stdout).toMatch(/\/namespaces\/default\/workflows\/connection-status-page-ok/);

    const key = await connectWithNewKey(BROKEN);
    sb.admin.revokeKey(key.id);
    // A sync makes the first request with the revoked key: the connection learns of it. Into a
    // file of its own: the default one is the healthy connection's, and a destination has one
    // writer (the pass would be refused before it asks the service anything).
    const sync = await runCli(
      ['sync', 'leads', '--connection', BROKEN, '--to', `sqlite:${join(dir, 'broken.db')}`],
      env,
      120_000,
    );
    expect(sync.code, sync.stdout + sync.stderr).not.toBe(0);
    await until(
      'the connection to need re-authorization',
      async () => {
        const report = await statusJson();
        return report.problems.some((p) => p.connectionId === BROKEN && p.kind === 'needs_reauth')
          ? report
          : undefined;
      },
      120_000,
    );

    const broken = await runCli(['status', '--json'], env);
    expect(broken.code).toBe(1);
    const report = JSON.parse(broken.stdout) as StatusJson;
    expect(report.problems.map((p) => p.connectionId)).toContain(BROKEN);
    expect(report.problems.map((p) => p.connectionId)).not.toContain(HEALTHY);
    expect(broken.stderr).toMatch(new RegExp(`connection ${BROKEN} needs re-authorization`));
    expect(broken.stdout).not.toContain(key.key);
  }, 240_000);
});
