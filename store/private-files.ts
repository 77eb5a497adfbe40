import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '../config/index.js';
import { StoreFailedError, StoreLocationError } from './errors.js';

/**
 * Owner-only modes for what ebsync keeps on disk: the mirror holds names and e-mails in
 * plaintext, the stores sealed secrets beside ids, the data dir the key file. Applied where
 * each directory is made and each file opened, whatever the umask.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Side files SQLite keeps beside a database, which hold its pages too. */
const SQLITE_SIDE_FILES = ['-wal', '-shm', '-journal'];

function fileInTheWay(dir: string): StoreLocationError {
  return new StoreLocationError(`cannot make the folder '${dir}': a file is in its way`);
}

/** Why a folder cannot be made, in words, as a typed error (not `EEXIST: … mkdir …`). */
function folderRefused(dir: string, error: unknown): Error {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EEXIST' || code === 'ENOTDIR') return fileInTheWay(dir);
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new StoreFailedError(`cannot make the folder '${dir}': not allowed here (${code})`);
  }
  if (code === 'ENOENT') {
    // mkdir under a folder that exists said "no such file": a file system that holds no
    // folders of ours (/proc, /sys).
    return new StoreFailedError(
      `cannot make the folder '${dir}': its file system does not allow it (${code})`,
    );
  }
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Makes `dir` and any missing parent owner-only. A directory that exists keeps its mode: it
 * may be shared on purpose (a destination file in /tmp, a data dir someone chose).
 *
 * One level at a time, from the nearest folder that exists: Node's recursive mkdir loops for
 * ever where mkdir answers ENOENT under a folder that exists (anything under /proc), and a
 * command asked for such a path hung instead of saying why.
 */
export function makePrivateDir(dir: string): void {
  const missing: string[] = [];
  for (let at = resolve(dir); ; at = dirname(at)) {
    let stats;
    try {
      stats = statSync(at);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw folderRefused(dir, error);
      missing.push(at);
      if (dirname(at) === at) break;
      continue;
    }
    if (!stats.isDirectory()) throw fileInTheWay(dir);
    break;
  }
  for (const level of missing.reverse()) {
    try {
      mkdirSync(level, { mode: PRIVATE_DIR_MODE });
    } catch (error) {
      // Made meanwhile by another process (two workers starting at once) is made.
      const made = (error as NodeJS.ErrnoException).code === 'EEXIST' && isFolder(level);
      if (!made) throw folderRefused(dir, error);
    }
  }
}

/**
 * Makes the data dir (EBSYNC_DATA_DIR) as makePrivateDir makes a folder. One that cannot be
 * made is a bad setting: said naming it, as any setting is (exit 2), not as a folder of
 * unknown origin that cannot be made.
 */
export function makeDataDir(dir: string): void {
  if (existsSync(dir) && !isFolder(dir)) {
    throw new ConfigError([`EBSYNC_DATA_DIR: '${dir}' is a file; expected a folder`]);
  }
  try {
    makePrivateDir(dir);
  } catch (error) {
    if (error instanceof StoreFailedError || error instanceof StoreLocationError) {
      throw new ConfigError([`EBSYNC_DATA_DIR: ${error.message}`]);
    }
    throw error;
  }
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function tighten(path: string): void {
  try {
    // Regular files only: a path that names a folder or a device (`--to /tmp`,
    // `sqlite:/dev/null`) is refused by whoever opens it, and chmod 0600 there took /tmp or
    // /dev/null from every other user of the machine.
    const stats = statSync(path);
    if (stats.isFile() && (stats.mode & 0o077) !== 0) chmodSync(path, PRIVATE_FILE_MODE);
  } catch (error) {
    // Gone meanwhile (SQLite removes its side files on close), or not ours to change: the
    // owner's mode is the owner's business.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'EPERM') throw error;
  }
}

/**
 * Before SQLite opens a database file: one that does not exist is created 0600 (SQLite gives
 * its -wal and -shm the database's mode); one that exists must be a regular file. Its mode is
 * changed only once SQLite has taken it as a database (tightenSqliteFiles, after the open):
 * `--to sqlite:/etc/passwd` once took that file from every other user, before SQLite refused
 * to open it.
 *
 * An existing file is never opened here, not even to read its header: closing any descriptor
 * of a file drops every POSIX lock this process holds on it, SQLite's among them. With the
 * worker's locks on the mirror or the store gone, the next `sqlite3` to close the file took
 * itself for its last user, checkpointed the WAL and deleted it under the worker, whose
 * commits then went to a log no other process could see, and were lost with it.
 */
export function prepareSqliteFile(file: string): void {
  if (!existsSync(file)) {
    try {
      closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
    } catch (error) {
      // A folder this user may not write (read-only, another user's): one line, not Node's.
      // Other failures (a full disk, too many open files) are no matter of where.
      const code = (error as NodeJS.ErrnoException).code ?? '';
      if (!UNMAKEABLE_PATH.has(code)) throw error;
      throw new StoreLocationError(
        `'${file}' cannot be made (${code}); expected a path in a folder this user can write`,
      );
    }
  } else if (!statSync(file).isFile()) {
    const what = statSync(file).isDirectory() ? 'a folder' : 'not a regular file';
    throw new StoreLocationError(`'${file}' is ${what}; expected an SQLite database file`);
  }
}

/** Why a file cannot be made where a path says: the path's fault, not the machine's. */
const UNMAKEABLE_PATH = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR']);

/** SQLite's file header: the first 16 bytes of every database file. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * What a file holds, by its first bytes: an SQLite database, nothing, something else. Only for
 * a file no SQLite connection of this process has open (see prepareSqliteFile).
 */
export type SqliteFileKind = 'sqlite' | 'empty' | 'other' | { unreadable: string };

export function sqliteFileKind(file: string): SqliteFileKind {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const head = Buffer.alloc(SQLITE_HEADER.length);
    const read = readSync(fd, head, 0, head.length, 0);
    if (read === 0) return 'empty';
    return head.equals(SQLITE_HEADER) ? 'sqlite' : 'other';
  } catch (error) {
    return { unreadable: (error as NodeJS.ErrnoException).code ?? 'an error' };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Tightens a database, and its side files, to 0600 (one an earlier version or another program
 * left readable by others); creates nothing, and opens none of them (paths only).
 */
export function tightenSqliteFiles(file: string): void {
  for (const path of [file, ...SQLITE_SIDE_FILES.map((side) => `${file}${side}`)]) tighten(path);
}
