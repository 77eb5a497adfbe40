import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
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

/**
 * Makes `dir` and any missing parent owner-only. A directory that exists keeps its mode: it
 * may be shared on purpose (a destination file in /tmp, a data dir someone chose).
 */
export function makePrivateDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  } catch (error) {
    // Said in words, not as `EEXIST: file already exists, mkdir ...`.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR') {
      throw new StoreLocationError(`cannot make the folder '${dir}': a file is in its way`);
    }
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      throw new StoreFailedError(`cannot make the folder '${dir}': not allowed here (${code})`);
    }
    throw error;
  }
}

function tighten(path: string): void {
  try {
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, PRIVATE_FILE_MODE);
  } catch (error) {
    // Gone meanwhile (SQLite removes its side files on close), or not ours to change: the
    // owner's mode is the owner's business.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'EPERM') throw error;
  }
}

/**
 * An SQLite database file as ebsync keeps it: created 0600 before SQLite opens it (SQLite
 * gives its -wal and -shm the database's mode), and tightened, with those side files, when an
 * earlier version left it readable by others.
 */
export function keepSqliteFilePrivate(file: string): void {
  if (!existsSync(file)) closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  tightenSqliteFiles(file);
}

/** Tightens a database another program made, and its side files, to 0600; creates nothing. */
export function tightenSqliteFiles(file: string): void {
  for (const path of [file, ...SQLITE_SIDE_FILES.map((side) => `${file}${side}`)]) tighten(path);
}
