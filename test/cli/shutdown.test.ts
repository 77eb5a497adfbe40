import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../../config/index.js';
import { dataConverter } from '../../worker/data-converter.js';
import { WORKER_LAUNCH } from '../../worker/heap-mode.js';
import { connectionWorkflow } from '../../workflows/connection.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { connectionWorkflowId, type ConnectionInput } from '../../workflows/connection-types.js';
import { CliProcess, REPO_ROOT, cliEnv, jsonLines } from '../helpers/cli.js';
import { keyConnectionInput } from '../fixtures/connection-scenarios.js';

/** temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED */
const PENDING_ACTIVITY_STARTED = 2;

/**
 * SIGTERM lets running activities finish within EBSYNC_SHUTDOWN_GRACE. The activity here is a
 * token refresh against a local authorization server that takes 3 s to answer.
 */
let dir: string;
let oauth: Server;
let oauthUrl: string;
let tokenRequests = 0;
let connection: Connection;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-shutdown-'));
  oauth = createServer((req, res) => {
    tokenRequests += 1;
    req.resume();
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(
        JSON.stringify({
          access_token: `at_${randomBytes(8).toString('hex')}`,
          token_type: 'Bearer',
          expires_in: 3600,
          refresh_token: `rt_${randomBytes(8).toString('hex')}`,
          scope: 'lead_read',
        }),
      );
    }, 3_000);
  });
  await new Promise<void>((r) => oauth.listen(0, '127.0.0.1', r));
  const address = oauth.address();
  oauthUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  connection = await Connection.connect({ address: inject('temporalAddress') });
});

afterAll(async () => {
  await connection?.close();
  await new Promise((r) => oauth.close(r));
  rmSync(dir, { recursive: true, force: true });
});

async function refreshDuringShutdown(
  grace: string,
): Promise<{ completed: boolean; exitMs: number; code: number | null }> {
  const env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `shutdown-${randomBytes(4).toString('hex')}`,
    EBSYNC_DATA_DIR: join(dir, 'data'),
    EBSYNC_SHUTDOWN_GRACE: grace,
  };
  const config = loadConfig({ ...env, PATH: process.env.PATH ?? '' });
  const client = new Client({ connection, dataConverter: dataConverter(config) });
  const worker = new CliProcess(['worker'], env);
  await worker.waitForLine(/worker started/, 90_000);

  const id = `grace-${randomBytes(4).toString('hex')}`;
  const now = Date.now();
  const input: ConnectionInput = {
    profile: {
      connectionId: id,
      kind: 'installed_app',
      baseUrl: 'https://svc.example/api/v1/',
      authUrl: oauthUrl,
      clientId: 'c1',
      permissions: [],
    },
    // Already expired: the first request for credentials refreshes.
    credentials: {
      kind: 'oauth',
      accessToken: 'at_old',
      refreshToken: 'rt_old',
      accessIssuedAt: now - 7_200_000,
      accessExpiresAt: now - 3_600_000,
    },
  };
  const handle = await client.workflow.start(connectionWorkflow, {
    taskQueue: env.TEMPORAL_TASK_QUEUE,
    workflowId: connectionWorkflowId(id),
    args: [input],
  });
  const before = tokenRequests;
  const started = Date.now();
  while (tokenRequests === before && Date.now() - started < 30_000)
    await new Promise((r) => setTimeout(r, 50));
  expect(tokenRequests).toBe(before + 1);
  const signalled = Date.now();
  const result = await worker.stop('SIGTERM', 30_000);
  const exitMs = Date.now() - signalled;
  const history = await handle.fetchHistory();
  const completed = (history.events ?? []).some((e) => e.activityTaskCompletedEventAttributes);
  await handle.terminate('test over');
  return { completed, exitMs, code: result.code };
}

describe('ebsync worker shutdown', () => {
  it('lets a running activity finish within EBSYNC_SHUTDOWN_GRACE before exiting', async () => {
    const { completed, exitMs, code } = await refreshDuringShutdown('20s');
    expect(code).toBe(0);
    expect(completed).toBe(true);
    expect(exitMs).toBeGreaterThan(1_500);
  }, 120_000);

  it('never abandons a token refresh in flight, even past a short grace', async () => {
    // Cutting it off would lose the rotated refresh token the server has already issued.
    const { completed, exitMs, code } = await refreshDuringShutdown('200ms');
    expect(code).toBe(0);
    expect(completed).toBe(true);
    expect(exitMs).toBeGreaterThan(1_500);
  }, 120_000);

  it('a Ctrl-C while the worker is still starting stops it once started, exit 0', async () => {
    // The runtime's signal handler runs before the worker exists; it must still be honoured.
    const worker = new CliProcess(['worker'], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `early-stop-${randomBytes(4).toString('hex')}`,
      EBSYNC_DATA_DIR: join(dir, 'data'),
    });
    await worker.waitForLine(/worker starting/, 60_000);
    const result = await worker.stop('SIGINT', 90_000);
    expect(result.code).toBe(0);
    expect(result.signal).toBeNull();
    expect(result.stdout + result.stderr).toMatch(/worker stopped/);
  }, 150_000);

  it('stops within its grace while a mirror activity waits on a query no worker will answer', async () => {
    const env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `query-stop-${randomBytes(4).toString('hex')}`,
      EBSYNC_DATA_DIR: join(dir, 'data'),
      EBSYNC_SHUTDOWN_GRACE: '1s',
    };
    const config = loadConfig({ ...env, PATH: process.env.PATH ?? '' });
    const client = new Client({ connection, dataConverter: dataConverter(config) });
    const id = `unanswered-${randomBytes(4).toString('hex')}`;
    // The connection's workflow starts on a queue of its own, whose worker then stops: from
    // there its status query, which a mirror activity asks before reading, waits for a
    // workflow task no worker takes, as it does when the worker running both has begun to stop.
    const connectionQueue = `${env.TEMPORAL_TASK_QUEUE}-connection`;
    const connectionWorker = new CliProcess(['worker'], {
      ...env,
      TEMPORAL_TASK_QUEUE: connectionQueue,
    });
    const worker = new CliProcess(['worker'], env);
    const connectionHandle = await client.workflow.start(connectionWorkflow, {
      taskQueue: connectionQueue,
      workflowId: connectionWorkflowId(id),
      args: [keyConnectionInput(id, 'ik_unanswered_query')],
    });
    try {
      await connectionWorker.waitForLine(/worker started/, 90_000);
      const begun = Date.now();
      const taskDone = async (): Promise<boolean> =>
        ((await connectionHandle.fetchHistory()).events ?? []).some(
          (e) => e.workflowTaskCompletedEventAttributes,
        );
      while (!(await taskDone()) && Date.now() - begun < 30_000)
        await new Promise((r) => setTimeout(r, 100));
      expect((await connectionWorker.stop('SIGTERM', 60_000)).code).toBe(0);

      await worker.waitForLine(/worker started/, 90_000);
      const mirror = await client.workflow.start(mirrorWorkflow, {
        taskQueue: env.TEMPORAL_TASK_QUEUE,
        workflowId: `mirror-${id}`,
        args: [
          {
            connectionId: id,
            destination: `sqlite:${join(dir, `${id}.db`)}`,
            subjects: ['leads'],
            mode: 'full',
          },
        ],
      });
      const started = Date.now();
      const running = async (): Promise<boolean> =>
        ((await mirror.describe()).raw.pendingActivities ?? []).some(
          (a) => Number(a.state) === PENDING_ACTIVITY_STARTED,
        );
      let asking = false;
      while (!asking && Date.now() - started < 30_000) {
        asking = await running();
        if (!asking) await new Promise((r) => setTimeout(r, 100));
      }
      expect(asking).toBe(true);
      // Well into the query's wait, past anything that fails at once.
      await new Promise((r) => setTimeout(r, 2_000));
      expect(await running()).toBe(true);
      const signalled = Date.now();
      const result = await worker.stop('SIGTERM', 60_000);
      expect(result.code).toBe(0);
      // The grace (1 s), then the activity's call cancelled: not the query's own end (~30 s).
      expect(Date.now() - signalled).toBeLessThan(15_000);
      await mirror.terminate('test over');
    } finally {
      worker.killAll();
      connectionWorker.killAll();
      await connectionHandle.terminate('test over').catch(() => undefined);
    }
  }, 240_000);

  it('ends once stopped even while something still holds the event loop, and says so', async () => {
    const worker = new CliProcess(['worker'], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `held-${randomBytes(4).toString('hex')}`,
      EBSYNC_DATA_DIR: join(dir, 'data'),
      NODE_OPTIONS: `--import=${join(REPO_ROOT, 'test/fixtures/hold-event-loop.mjs')}`,
    });
    await worker.waitForLine(/worker started/, 90_000);
    // Without the exit the held timer keeps the process for good, and this stop times out.
    const result = await worker.stop('SIGTERM', 60_000);
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).toMatch(/worker stopped/);
    expect(result.stderr).toMatch(
      /ebsync: stopped, but the process was still held open 2 s later \(.*Timeout.*\); ending it/,
    );
  }, 150_000);

  it.each([
    { command: 'sandbox', args: ['sandbox', '--http', '--port', '0'], ready: /^Stop: Ctrl-C/ },
    {
      command: 'webhooks serve',
      args: ['webhooks', 'serve', '--port', '0'],
      ready: /webhook receiver listening/,
    },
    { command: 'status --serve', args: ['status', '--serve'], ready: /^Status page: http/ },
  ])(
    '`$command` ends once stopped too, and says what held it',
    async ({ args, ready }) => {
      const cli = new CliProcess(args, {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: `held-${randomBytes(4).toString('hex')}`,
        EBSYNC_DATA_DIR: join(dir, 'data'),
        EBSYNC_STATUS_PORT: '0',
        NODE_OPTIONS: `--import=${join(REPO_ROOT, 'test/fixtures/hold-event-loop.mjs')}`,
      });
      try {
        await cli.waitForLine(ready, 90_000);
        const result = await cli.stop('SIGTERM', 30_000);
        expect(result.code).toBe(0);
        expect(result.stderr).toMatch(
          /ebsync: stopped, but the process was still held open 2 s later \(.*Timeout.*\); ending it/,
        );
      } finally {
        cli.killAll();
      }
    },
    150_000,
  );

  it('runs the worker in the process it was started as, with its small-footprint tuning', async () => {
    const worker = new CliProcess(['worker'], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `tuned-${randomBytes(4).toString('hex')}`,
      EBSYNC_DATA_DIR: join(dir, 'data'),
    });
    await worker.waitForLine(/worker started/, 90_000);
    // Same pid: the process became the tuned one (no parent left waiting on a child).
    const pid = worker.child.pid ?? 0;
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    for (const flag of WORKER_LAUNCH.nodeFlags) expect(argv).toContain(flag);
    for (const [name, value] of Object.entries(WORKER_LAUNCH.env))
      expect(environ).toContain(`${name}=${value}`);
    const result = await worker.stop('SIGTERM', 60_000);
    expect(result.code).toBe(0);
  }, 150_000);

  it("leaves a tuning flag the user gave to the user's value", async () => {
    // V8 takes the last value of a flag: ours added after the user's would override it.
    const worker = new CliProcess(['worker'], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `user-tuned-${randomBytes(4).toString('hex')}`,
      EBSYNC_DATA_DIR: join(dir, 'data'),
      NODE_OPTIONS: '--max_semi_space_size=16',
    });
    await worker.waitForLine(/worker started/, 90_000);
    const pid = worker.child.pid ?? 0;
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    expect(WORKER_LAUNCH.nodeFlags.length).toBeGreaterThan(0);
    for (const flag of WORKER_LAUNCH.nodeFlags) expect(argv).not.toContain(flag);
    expect(environ).toContain('NODE_OPTIONS=--max_semi_space_size=16');
    // The rest of the tuning still applies.
    for (const [name, value] of Object.entries(WORKER_LAUNCH.env))
      expect(environ).toContain(`${name}=${value}`);
    const result = await worker.stop('SIGTERM', 60_000);
    expect(result.code).toBe(0);
  }, 150_000);

  it('stops the relaunched worker (as on SIGTERM) when its launcher is SIGKILLed', async () => {
    // Without process.execve (Node before 22.15, or a system that refuses it) cli/ebsync.js
    // starts the tuned worker as a child; the preload takes execve away to take that path here.
    // A SIGKILL of the launcher forwards no signal: the child must notice on its own.
    const launcher = spawn(
      process.execPath,
      ['--import', 'data:text/javascript,delete process.execve', 'cli/ebsync.js', 'worker'],
      {
        cwd: REPO_ROOT,
        env: cliEnv({
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          TEMPORAL_TASK_QUEUE: `orphan-${randomBytes(4).toString('hex')}`,
          EBSYNC_DATA_DIR: join(dir, 'data'),
        }),
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    let stdout = '';
    launcher.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    launcher.stderr.resume();
    let childPid = 0;
    const alive = (pid: number): boolean => {
      try {
        // A zombie (ended, not yet reaped by whoever adopted it) counts as ended.
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    try {
      const deadline = Date.now() + 90_000;
      while (!stdout.includes('"worker started"') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      const started = jsonLines(stdout).find((line) => line.msg === 'worker started');
      expect(started, stdout).toBeDefined();
      childPid = Number(started?.pid);
      // The worker runs in a child of the launcher, not in the launcher itself.
      expect(childPid).not.toBe(launcher.pid);
      expect(readFileSync(`/proc/${childPid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]).toBe(
        String(launcher.pid),
      );

      launcher.kill('SIGKILL');
      const killed = Date.now();
      while (alive(childPid) && Date.now() - killed < 20_000)
        await new Promise((r) => setTimeout(r, 100));
      expect(alive(childPid)).toBe(false);
      // Stopped as on SIGTERM: drained and said so, not killed.
      await new Promise((r) => setTimeout(r, 200));
      expect(stdout).toMatch(/"worker stopped"/);
    } finally {
      for (const pid of [launcher.pid, childPid]) {
        try {
          if (pid) process.kill(-pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  }, 150_000);
});
