import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { connect } from 'node:net';
import { dirname, resolve } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { makePrivateDir, sqliteFileKind, tightenSqliteFiles } from '../store/private-files.js';
import { childEnvironment } from './child-environment.js';
import { probeListen } from './listen-probe.js';
import { WATCHDOG_SOURCE } from './dev-server-guard.js';
import { findTemporalCli, NO_CLI_HINT, TemporalCliError } from './temporal-cli.js';
import { addressHost } from '../config/dev-server-ports.js';

/** A port someone else holds: the user picks another; retrying will not help. */
export class PortInUseError extends Error {
  override readonly name = 'PortInUseError';
  readonly retryable = false;
}

/** --db-filename names something that is not a database file (a folder, a device). */
export class DevServerFileError extends Error {
  override readonly name = 'DevServerFileError';
  readonly retryable = false;
}

export interface DevServerOptions {
  ip: string;
  port: number;
  uiPort: number;
  dbFilename: string;
  namespace: string;
  onProgress?: (line: string) => void;
  /**
   * Its own process group, out of reach of a Ctrl-C at the terminal: the caller stops it with
   * stop() when what uses it is done (`ebsync dev` stops its worker first). It is also stopped
   * when this process exits (not when it is killed by SIGKILL).
   */
  ownProcessGroup?: boolean;
  /**
   * With ownProcessGroup: the file (in the data dir) that records the server while it runs,
   * for the next start to stop it should it outlive this process (worker/dev-server-guard.ts).
   */
  recordFile?: string;
}

export interface DevServer {
  address: string;
  uiUrl: string;
  dbFilename: string;
  /** Resolves when the server process ends (by stop() or on its own). */
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

export async function assertPortFree(ip: string, port: number, flag: string): Promise<void> {
  await probeListen(ip, port).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE') throw error;
    throw new PortInUseError(
      `port ${port} on ${ip} is already in use (another Temporal server?); stop it or choose another with ${flag}`,
    );
  });
}

export function canConnect(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = connect({ host, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolvePromise(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function waitForPort(
  host: string,
  port: number,
  child: ChildProcess,
  timeoutMs: number,
  spawnError: () => Error | undefined = () => undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const failed = spawnError();
    if (failed) {
      throw new TemporalCliError(`the Temporal dev server could not be started: ${failed.message}`);
    }
    if (child.exitCode !== null) {
      // A watchdog's last word, why it could not start the server, may still be on its way.
      if (child.connected) await once(child, 'disconnect');
      const said = spawnError();
      if (said) {
        throw new TemporalCliError(`the Temporal dev server could not be started: ${said.message}`);
      }
      throw new Error(`the Temporal dev server exited with code ${child.exitCode} while starting`);
    }
    if (await canConnect(host, port)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `the Temporal dev server did not open ${host}:${port} within ${timeoutMs / 1000}s`,
  );
}

/**
 * Task-queue fairness (off by default on the dev server): per-connection rate limits and fair
 * shares between connections rest on it (docs/rate-limits.md).
 */
export const FAIRNESS_ARGS = ['--dynamic-config-value', 'matching.enableFairness=true'];

/**
 * The dev server's SQLite file in write-ahead-log mode. Its default rollback journal writes,
 * syncs and deletes a journal file on every commit: a signal-with-start of a new workflow ran
 * at about half the rate (`npm run bench -- temporal`). Synchronous is FULL (SQLite's
 * default, said here so no build's other default weakens it): a commit the server answered
 * survives a crash of the machine as before.
 */
const SQLITE_ARGS = ['--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=full'];

/** Everything a persistent dev server is started with beyond its address and file. */
export const DEV_SERVER_ARGS = [...SQLITE_ARGS, ...FAIRNESS_ARGS];

/**
 * Starts `temporal server start-dev` with SQLite persistence, so workflows survive restarts.
 * Without a CLI binary it falls back to the SDK's download (machines with internet).
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  await assertPortFree(options.ip, options.port, '--port');
  await assertPortFree(options.ip, options.uiPort, '--ui-port');
  const dbFilename = resolve(options.dbFilename);
  // Its histories are sealed, but ids, names and search attributes are not: owner-only,
  // as every other file in the data dir. The server makes the file (an empty one given to
  // it would not get its schema), so the file is tightened once it runs.
  makePrivateDir(dirname(dbFilename));
  if (existsSync(dbFilename) && !statSync(dbFilename).isFile()) {
    throw new DevServerFileError(
      `--db-filename '${dbFilename}' is ${statSync(dbFilename).isDirectory() ? 'a folder' : 'not a regular file'}; expected the dev server's SQLite database file (made if missing)`,
    );
  }
  // Else the server starts, prints its own log line and exits 1, and ours says only that.
  const kind = existsSync(dbFilename) ? sqliteFileKind(dbFilename) : 'sqlite';
  if (kind !== 'sqlite') {
    const what =
      kind === 'other'
        ? "is not an SQLite database (it does not begin with SQLite's header)"
        : kind === 'empty'
          ? 'is an empty file, where the server would not make its tables (remove it)'
          : `cannot be read (${kind.unreadable})`;
    throw new DevServerFileError(
      `--db-filename '${dbFilename}' ${what}; expected the dev server's SQLite database file (made if missing)`,
    );
  }
  const executable = await findTemporalCli(
    options.onProgress ? { onProgress: options.onProgress } : {},
  );
  // Where clients reach it: an IPv6 host in brackets, as in a URL (every address, `::`, at
  // loopback's).
  const host = options.ip === '::' ? '[::1]' : addressHost(options.ip);
  const address = `${host}:${options.port}`;
  const uiUrl = `http://${host}:${options.uiPort}`;

  if (executable.type === 'cached-download') {
    let env: TestWorkflowEnvironment;
    try {
      env = await TestWorkflowEnvironment.createLocal({
        server: {
          ip: options.ip,
          port: options.port,
          ui: true,
          uiPort: options.uiPort,
          dbFilename,
          namespace: options.namespace,
          extraArgs: DEV_SERVER_ARGS,
        },
      });
    } catch (error) {
      throw new TemporalCliError(`${NO_CLI_HINT} (download failed: ${(error as Error).message})`);
    }
    tightenSqliteFiles(dbFilename);
    let release: (code: number | null) => void = () => undefined;
    const exited = new Promise<number | null>((r) => (release = r));
    return {
      address,
      uiUrl,
      dbFilename,
      exited,
      async stop() {
        await env.teardown();
        release(0);
      },
    };
  }

  const serverArgs = [
    'server',
    'start-dev',
    '--ip',
    options.ip,
    '--port',
    String(options.port),
    '--ui-port',
    String(options.uiPort),
    '--db-filename',
    dbFilename,
    '--namespace',
    options.namespace,
    // Its warnings are about its own internals (on Ctrl-C, a screenful of failed polls as it
    // stops); errors still show.
    '--log-level',
    'error',
    ...DEV_SERVER_ARGS,
  ];
  // None of ebsync's settings: they hold its secrets (worker/child-environment.ts).
  // Out of this process's group, the server is started by a watchdog that stops it when this
  // process ends, even by SIGKILL, which no handler here hears (worker/dev-server-guard.ts).
  const child = options.ownProcessGroup
    ? spawn(
        process.execPath,
        ['-e', WATCHDOG_SOURCE, '--', options.recordFile ?? '', executable.path, ...serverArgs],
        {
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
          env: childEnvironment(),
          detached: true,
        },
      )
    : spawn(executable.path, serverArgs, {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: childEnvironment(),
      });
  // Out of its parent's process group, nothing else stops it when this process ends.
  const stopOnExit = (): void => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  if (options.ownProcessGroup) process.once('exit', stopOnExit);
  // A spawn that fails (EACCES, ENOENT) emits 'error', which unhandled would end this
  // process; it is this start's failure instead.
  let spawnError: Error | undefined;
  // The watchdog says why it could not start the server as spawn itself would.
  child.on('message', (message: { error?: unknown }) => {
    if (typeof message.error === 'string') spawnError = new Error(message.error);
  });
  const exited = new Promise<number | null>((r) => {
    child.once('error', (error) => {
      spawnError = error;
      r(null);
    });
    child.once('exit', (code) => r(code));
  });
  try {
    await waitForPort(options.ip, options.port, child, 60_000, () => spawnError);
  } catch (error) {
    child.kill('SIGTERM');
    process.off('exit', stopOnExit);
    throw error;
  }
  tightenSqliteFiles(dbFilename);
  return {
    address,
    uiUrl,
    dbFilename,
    exited,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      process.off('exit', stopOnExit);
    },
  };
}
