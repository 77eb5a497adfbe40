import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canConnect } from '../../worker/dev-server.js';
import { CliProcess, freePort } from '../helpers/cli.js';

/**
 * `ebsync dev` killed with SIGKILL. The dev server it starts runs in its own process group
 * (out of reach of a Ctrl-C at the terminal), so it used to live on, holding its port and its
 * SQLite file, and the next `ebsync dev` took it for someone else's server.
 */
let dir: string;
/** Every pid of a dev server or its watchdog seen here, killed at the end if still there. */
const seen = new Set<number>();
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-dev-killed-'));
});
afterAll(() => {
  for (const pid of seen) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/** The processes whose command line names this dev server's SQLite file (Linux's /proc). */
function serverPids(dbFile: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const at = argv.indexOf('--db-filename');
    // The server itself (`temporal server start-dev …`), not a process that names it.
    if (argv[1] === 'server' && argv[2] === 'start-dev' && at >= 0 && argv[at + 1] === dbFile) {
      pids.push(Number(entry));
    }
  }
  return pids;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The parent of a process (/proc/PID/stat's fourth field; the name in it may hold spaces). */
const parentOf = (pid: number): number =>
  Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);

async function until(check: () => boolean, withinMs: number): Promise<boolean> {
  for (const end = Date.now() + withinMs; Date.now() < end;) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return check();
}

/** `ebsync dev` with its own server on free ports, up to the line that says it runs. */
async function startDev(
  data: string,
  port: number,
): Promise<{ dev: CliProcess; devPid: number; server: number }> {
  const dev = new CliProcess(
    ['dev', '--port', String(port), '--ui-port', String(await freePort())],
    {
      EBSYNC_DATA_DIR: data,
      EBSYNC_WEBHOOK_PORT: '0',
      EBSYNC_STATUS_PORT: '0',
    },
  );
  // Not left running when it does not get that far (then the caller has no handle on it).
  try {
    await dev.waitForLine(/^Temporal UI: /, 120_000);
    const servers = serverPids(join(data, 'temporal.db'));
    for (const pid of servers) seen.add(pid).add(parentOf(pid));
    expect(servers).toHaveLength(1);
    const server = servers[0]!;
    // The process that started the server (the launcher execs into it, or starts it).
    const devPid = Number(readFileSync(join(data, 'dev.pid'), 'utf8').trim());
    return { dev, devPid, server };
  } catch (error) {
    dev.killAll();
    throw error;
  }
}

describe.runIf(existsSync('/proc/self/cmdline'))('ebsync dev killed with SIGKILL', () => {
  it('takes its dev server with it', async () => {
    const data = join(dir, 'killed');
    const port = await freePort();
    const { dev, devPid, server } = await startDev(data, port);
    try {
      process.kill(devPid, 'SIGKILL');
      expect(await until(() => !alive(server), 15_000)).toBe(true);
      expect(await canConnect('127.0.0.1', port)).toBe(false);
    } finally {
      dev.killAll();
    }
  }, 240_000);

  it('when its server outlived it anyway, the next dev on the data dir stops that server, saying so, and starts its own', async () => {
    const data = join(dir, 'left');
    const port = await freePort();
    const first = await startDev(data, port);
    let second: CliProcess | undefined;
    try {
      // Whatever watches over the server, killed with it: the server is left alone. The watcher
      // first: killed second, it could see `ebsync dev` go and stop the server in between.
      const watcher = parentOf(first.server);
      if (watcher !== first.devPid) process.kill(watcher, 'SIGKILL');
      process.kill(first.devPid, 'SIGKILL');
      // Not its exit event: the server left running holds the output pipes it inherited.
      expect(await until(() => !alive(first.devPid) && !alive(watcher), 15_000)).toBe(true);
      expect(alive(first.server)).toBe(true);
      expect(await canConnect('127.0.0.1', port)).toBe(true);

      const next = await startDev(data, port);
      second = next.dev;
      expect(second.stdout).toContain(
        `Stopped the Temporal dev server (pid ${first.server}) that an earlier ebsync dev on this data dir left running\n`,
      );
      expect(alive(first.server)).toBe(false);
      expect(next.server).not.toBe(first.server);
      expect(second.stdout).not.toContain('using the Temporal server already running');
      // Ctrl-C once its handlers are in place (before that, Node's default ends it at once).
      await second.waitForLine(/^Status page: /, 120_000);
      const stopped = await second.interrupt(60_000);
      expect(stopped.signal).toBeNull();
      expect(alive(next.server)).toBe(false);
    } finally {
      first.dev.killAll();
      second?.killAll();
    }
  }, 300_000);
});
