import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { healthCheckWorkflow } from '../../workflows/health.js';
import { CliProcess, freePort, runCli, temporalOnFreePorts } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ebsync-dev-server-'));
const dbFilename = join(dir, 't.db');
const cliPath = inject('temporalCliPath');
/** Reuse the CLI the global setup found, so nothing is built or downloaded again. */
const env: Record<string, string> = {
  EBSYNC_DATA_DIR: join(dir, 'data'),
  ...(cliPath ? { TEMPORAL_CLI_PATH: cliPath } : {}),
};

const servers: CliProcess[] = [];
let port: number;
let uiPort: number;

async function startServer(): Promise<CliProcess> {
  const server = new CliProcess(
    ['temporal', '--port', `${port}`, '--ui-port', `${uiPort}`, '--db-filename', dbFilename],
    env,
  );
  servers.push(server);
  await server.waitForLine(/^Temporal dev server ready at /, 90_000);
  return server;
}

/** Runs fn with a client of the server under test, closing the connection afterwards. */
async function withClient<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
  try {
    return await fn(new Client({ connection }));
  } finally {
    await connection.close();
  }
}

let first: CliProcess;
beforeAll(async () => {
  port = await freePort();
  uiPort = await freePort();
  first = await startServer();
}, 150_000);

afterAll(async () => {
  for (const server of servers) {
    if (server.running) await server.stop('SIGTERM', 20_000).catch(() => undefined);
    server.killAll();
  }
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

// Each step spawns the CLI or a dev server: slow on a busy machine.
describe('ebsync temporal', { timeout: 240_000 }, () => {
  it('prints where it listens and where its data is', () => {
    expect(first.stdout).toContain(
      `Temporal dev server ready at 127.0.0.1:${port} (namespace default)\n` +
        `  UI:   http://127.0.0.1:${uiPort}\n` +
        // Its UI is not at port + 1000, where other commands look for it by default.
        `  links: the UI is not at --port + 1000, so set TEMPORAL_UI_URL=http://127.0.0.1:${uiPort} for ebsync status and the status page\n` +
        `  data: ${dbFilename}\n`,
    );
    expect(existsSync(dbFilename)).toBe(true);
  });

  it('keeps its database file in WAL mode, not a journal rewritten on every commit', () => {
    // The file header's read and write format versions are 2 for WAL, 1 for a rollback journal.
    const header = readFileSync(dbFilename).subarray(18, 20);
    expect([...header]).toEqual([2, 2]);
    expect(existsSync(`${dbFilename}-wal`)).toBe(true);
  });

  it('refuses a second server on a --port in use, in one line naming the port', async () => {
    const otherUi = await freePort();
    const result = await runCli(
      [
        'temporal',
        '--port',
        `${port}`,
        '--ui-port',
        `${otherUi}`,
        '--db-filename',
        join(dir, 'b.db'),
      ],
      env,
    );
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('already in use');
    expect(lines[0]).toContain(`port ${port} `);
    expect(lines[0]).toContain('--port');
    expect(first.running).toBe(true);
  });

  it('refuses a --ui-port in use, in one line naming the port and the flag', async () => {
    const otherPort = await freePort();
    const result = await runCli(
      [
        'temporal',
        '--port',
        `${otherPort}`,
        '--ui-port',
        `${uiPort}`,
        '--db-filename',
        join(dir, 'c.db'),
      ],
      env,
    );
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`port ${uiPort} `);
    expect(lines[0]).toContain('already in use');
    expect(lines[0]).toContain('--ui-port');
  });

  it('keeps a running workflow across SIGINT and a restart on the same database file', async () => {
    // No worker polls this queue, so the workflow stays Running.
    const taskQueue = `no-worker-${randomUUID()}`;
    const workflowId = `persist-${taskQueue}`;
    await withClient(async (client) => {
      const handle = await client.workflow.start(healthCheckWorkflow, { taskQueue, workflowId });
      expect((await handle.describe()).status.name).toBe('RUNNING');
    });

    const stopped = await first.stop('SIGINT', 60_000);
    expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 0, signal: null });

    await startServer();
    const description = await withClient((client) =>
      client.workflow.getHandle(workflowId).describe(),
    );
    expect(description).toMatchObject({ workflowId, type: healthCheckWorkflow.name, taskQueue });
    expect(description.status.name).toBe('RUNNING');
  });

  it('says so in one line and exits 1 when its server dies under it', async () => {
    // Found killing the dev server of a three-worker deployment: `ebsync temporal` ended with
    // exit 0 and not a word, as if it had been stopped on purpose.
    const own = new CliProcess(await temporalOnFreePorts(join(dir, 'dies.db')), env);
    servers.push(own);
    await own.waitForLine(/^Temporal dev server ready at /, 90_000);
    const serverPid = descendants(own.child.pid!).find((pid) =>
      readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('start-dev'),
    );
    expect(serverPid).toBeDefined();
    process.kill(serverPid!, 'SIGKILL');
    const ended = await own.endsWithin(30_000, 'its server died');
    expect(ended.code, ended.stderr).toBe(1);
    // The server's own error lines, written as it was killed, may come first (its stderr is
    // passed through): ebsync's is the one line of its own, and the last.
    const lines = ended.stderr.trim().split('\n');
    const ours = lines.filter((line) => line.startsWith('ebsync:'));
    expect(ours, ended.stderr).toHaveLength(1);
    expect(lines.at(-1)).toBe(ours[0]);
    expect(ours[0]).toMatch(/^ebsync: the Temporal dev server stopped on its own \(/);
  });
});

/** The processes under pid (children, theirs, …), from /proc. */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The fields after the command name (in parentheses, which may hold spaces).
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parentOf.set(Number(entry), Number(fields[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const found: number[] = [];
  let frontier = [pid];
  while (frontier.length > 0) {
    const next = [...parentOf].filter(([, parent]) => frontier.includes(parent)).map(([p]) => p);
    found.push(...next);
    frontier = next;
  }
  return found;
}
