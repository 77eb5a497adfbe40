import { spawnSync } from 'node:child_process';
import { readFileSync, unlinkSync } from 'node:fs';

/**
 * What keeps a dev server that `ebsync dev` starts from outliving it. The server runs in its
 * own process group (out of reach of a Ctrl-C at the terminal, worker/dev-server.ts), so
 * nothing ended it when `ebsync dev` was killed with SIGKILL: it held its port and its SQLite
 * file, and the next `ebsync dev` took it for someone else's server. Two guards:
 *
 * - a watchdog process between the two, whose IPC channel to `ebsync dev` the kernel closes
 *   however that process ends: the watchdog then stops the server (Node has no portable
 *   PR_SET_PDEATHSIG);
 * - a record of the server in the data dir, so that the next `ebsync dev` there stops a server
 *   that outlived both (the watchdog killed too), once it has checked that the process is that
 *   server.
 */

/** How long a server whose parent is gone gets to stop on SIGTERM before SIGKILL. */
const ORPHAN_GRACE_MS = 10_000;

/**
 * The watchdog, run as `node -e WATCHDOG_SOURCE -- RECORD COMMAND ARGS…` with an IPC channel.
 * A source text rather than a file: the same text runs from dist/, from the TypeScript sources
 * and under the tests, whatever Node type-strips. It tells its parent the server's pid (or why
 * it could not start it), passes on the parent's SIGTERM, and ends as the server ended.
 */
export const WATCHDOG_SOURCE = `'use strict';
const { spawn } = require('node:child_process');
const { readFileSync, unlinkSync, writeFileSync } = require('node:fs');
const [record, command, ...args] = process.argv.slice(1);
const server = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.kill('SIGTERM');
};
// A Ctrl-C or hang-up reaches the server itself when they share a terminal; passed on too, it
// would be a second one, which makes the server quit at once.
process.on('SIGINT', () => undefined);
process.on('SIGHUP', () => undefined);
process.on('SIGTERM', stop);
process.on('disconnect', () => {
  stop();
  setTimeout(() => server.kill('SIGKILL'), ${ORPHAN_GRACE_MS}).unref();
});
server.once('error', (error) => {
  if (process.connected) process.send({ error: error.message }, () => process.exit(127));
  else process.exit(127);
});
server.once('spawn', () => {
  if (record) {
    writeFileSync(
      record,
      JSON.stringify({ pid: server.pid, executable: command, args }) + '\\n',
      { mode: 0o600 },
    );
  }
  if (process.connected) process.send({ pid: server.pid });
});
server.once('exit', (code, signal) => {
  try {
    if (record && JSON.parse(readFileSync(record, 'utf8')).pid === server.pid) unlinkSync(record);
  } catch {}
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exit(code ?? 1);
});
`;

interface ServerRecord {
  pid: number;
  executable: string;
  args: string[];
}

function readRecord(file: string): ServerRecord | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<ServerRecord>;
    if (
      Number.isSafeInteger(parsed.pid) &&
      (parsed.pid ?? 0) > 1 &&
      typeof parsed.executable === 'string' &&
      Array.isArray(parsed.args)
    ) {
      return parsed as ServerRecord;
    }
  } catch {
    // none, or unreadable: nothing to stop
  }
  return undefined;
}

/** A process's arguments (/proc on Linux, ps elsewhere), or undefined when it is gone. */
function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    // not Linux, or gone
  }
  const ps = spawnSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8' });
  return ps.status === 0 && ps.stdout.trim() ? ps.stdout.trim().split(/\s+/) : undefined;
}

/** Whether a process with this id runs (EPERM: it does, under another user). */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function gone(pid: number, withinMs: number): Promise<boolean> {
  for (const until = Date.now() + withinMs; Date.now() < until;) {
    if (!processRuns(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !processRuns(pid);
}

/**
 * Stops the dev server that `file` records, when it still runs and is that server: the same
 * executable with the same arguments (a pid the system has since given to another process
 * is left alone). Returns its pid when it stopped one. The caller holds the data dir's lock,
 * so a server recorded there is left from an earlier `ebsync dev` that is gone.
 */
export async function stopLeftServer(file: string): Promise<number | undefined> {
  const record = readRecord(file);
  if (!record) return undefined;
  const argv = commandLine(record.pid);
  const same =
    argv !== undefined &&
    argv[0] === record.executable &&
    argv.slice(1).join('\0') === record.args.join('\0');
  if (same) {
    process.kill(record.pid, 'SIGTERM');
    if (!(await gone(record.pid, ORPHAN_GRACE_MS))) {
      process.kill(record.pid, 'SIGKILL');
      await gone(record.pid, 5_000);
    }
  }
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
  return same ? record.pid : undefined;
}
