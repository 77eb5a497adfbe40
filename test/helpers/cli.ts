import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The repository root: the CLI runs from here, as `npx ebsync` does in a clone. */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

/**
 * The test process's environment without any ebsync or Temporal setting of the machine that
 * runs the tests, plus `extra`: children see only what a test gives them.
 */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(EBS_|EBSYNC_|TEMPORAL_)/.test(key)) env[key] = value;
  }
  return { ...env, ...extra };
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A running `ebsync …` child process whose output is collected as it comes. */
export class CliProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<CliResult>;
  private readonly listeners = new Set<() => void>();

  constructor(args: readonly string[], env: Record<string, string> = {}, stdin?: string) {
    // Its own process group, so cleanup can also reach what it started (a dev server).
    this.child = spawn(process.execPath, ['cli/ebsync.js', ...args], {
      cwd: REPO_ROOT,
      env: cliEnv(env),
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child.stdin?.end(stdin);
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stdout += chunk;
      for (const listener of this.listeners) listener();
    });
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve, reject) => {
      this.child.once('error', reject);
      this.child.once('close', (code, signal) =>
        resolve({ code, signal, stdout: this.stdout, stderr: this.stderr }),
      );
    });
    this.exited.catch(() => undefined);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the first stdout line matching `pattern`; rejects on exit or timeout. */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const line = this.stdout.split('\n').find((l) => pattern.test(l));
        if (line !== undefined) finish(() => resolve(line));
      };
      const timer = setTimeout(
        () =>
          finish(() =>
            reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms${this.dump()}`)),
          ),
        timeoutMs,
      );
      const finish = (settle: () => void): void => {
        clearTimeout(timer);
        this.listeners.delete(check);
        settle();
      };
      this.listeners.add(check);
      void this.exited.then((result) =>
        finish(() =>
          reject(
            new Error(
              `exited (code ${result.code}, signal ${result.signal}) before a line matching ${pattern}${this.dump()}`,
            ),
          ),
        ),
      );
      check();
    });
  }

  /** Sends `signal` to the ebsync process only (as `kill <pid>` would) and waits for it to end. */
  async stop(signal: NodeJS.Signals, timeoutMs: number): Promise<CliResult> {
    if (this.running) this.child.kill(signal);
    return withTimeout(this.exited, timeoutMs, `still running ${timeoutMs} ms after ${signal}`);
  }

  /** Its end, which `why` (something done to what it runs) should bring within `timeoutMs`. */
  endsWithin(timeoutMs: number, why: string): Promise<CliResult> {
    return withTimeout(this.exited, timeoutMs, `still running ${timeoutMs} ms after ${why}`);
  }

  /** Ctrl-C on a terminal: SIGINT to the whole process group, ebsync and what it started. */
  async interrupt(timeoutMs: number): Promise<CliResult> {
    const pid = this.child.pid;
    if (this.running && pid !== undefined) process.kill(-pid, 'SIGINT');
    return withTimeout(this.exited, timeoutMs, `still running ${timeoutMs} ms after Ctrl-C`);
  }

  /** Last-resort cleanup: kills the whole process group (ebsync and anything it started). */
  killAll(): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  private dump(): string {
    return `\n--- stdout ---\n${this.stdout}\n--- stderr ---\n${this.stderr}`;
  }
}

/** Runs `ebsync …` to completion. */
export async function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 90_000,
  /** Written to the command's standard input, which is then closed (none when left out). */
  stdin?: string,
): Promise<CliResult> {
  const cli = new CliProcess(args, env, stdin);
  try {
    return await withTimeout(cli.exited, timeoutMs, `ebsync ${args.join(' ')} did not finish`);
  } finally {
    cli.killAll();
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${message} (${ms} ms)`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Ports handed out in this process, so two calls never name the same one. Ports come from below
 * the kernel's ephemeral range (32768-60999 on Linux): a port taken from that range (bound to 0,
 * then released) can be handed by the kernel to any other socket before the server under test
 * binds it, and one CI run failed that way (a dev server's UI port, "address already in use").
 */
const handedOut = new Set<number>();
const LOWEST = 20_000;
const SPAN = 12_000;

function listenable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** A TCP port nobody listens on right now, outside the range the kernel assigns by itself. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * SPAN);
    if (handedOut.has(port)) continue;
    if (await listenable(port, host)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port between ${LOWEST} and ${LOWEST + SPAN} on ${host}`);
}

/** `ebsync temporal` on two free ports (server and UI), its database in `dbFile`. */
export async function temporalOnFreePorts(dbFile: string): Promise<string[]> {
  return [
    'temporal',
    '--port',
    String(await freePort()),
    '--ui-port',
    String(await freePort()),
    '--db-filename',
    dbFile,
  ];
}

/** The JSON log lines of a worker's stdout (other lines skipped). */
export function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
