import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openMirrorFile, openSqliteFile } from '../../store/sqlite-files.js';

/**
 * Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's
 * among them. Opening a database file read its header through a descriptor of its own, and so
 * dropped the worker's locks on its store and its mirror: the next `sqlite3` to close the file
 * took itself for its last user and deleted the WAL under the worker, whose later commits no
 * other process could see and a crash lost.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-sqlite-locks-'));
const betterSqlite3 = createRequire(import.meta.url).resolve('better-sqlite3');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What another program (a user's sqlite3) sees: it opens the file, counts the rows, closes. */
function countFromAnotherProcess(file: string): number {
  const script =
    `const D = require(${JSON.stringify(betterSqlite3)});` +
    `const db = new D(${JSON.stringify(file)});` +
    `process.stdout.write(String(db.prepare('SELECT count(*) AS n FROM t').get().n));` +
    `db.close();`;
  return Number(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }));
}

/** The POSIX locks this process holds on a file, from the kernel's list (/proc/locks). */
function locksHeldOn(file: string): number {
  const inode = `:${statSync(file).ino} `;
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .filter((line) => line.includes(` ${process.pid} `) && line.includes(inode)).length;
}

describe('a database file this process has open', () => {
  for (const [name, open] of [
    ['the store', openSqliteFile],
    ['the mirror', openMirrorFile],
  ] as const) {
    it(`keeps its locks when another program opens and closes ${name}`, () => {
      const file = join(dir, `${name.replace(' ', '-')}.db`);
      const db = open(file);
      db.exec('CREATE TABLE t (x INTEGER)');
      db.prepare('INSERT INTO t VALUES (1)').run();
      // The ledger and the webhook inbox each open the store, the destination its file again
      // after it was replaced: a second open in one process, while the first holds its locks.
      const again = open(file);
      try {
        // SQLite keeps a read lock on the database file while in WAL mode: what tells another
        // program, closing the file, that it is not the last user (the sqlite3 shell then
        // checkpoints and deletes the WAL).
        // The kernel's lock list is Linux's (/proc/locks); elsewhere the reads below still check.
        if (process.platform === 'linux') expect(locksHeldOn(file)).toBeGreaterThan(0);
        expect(countFromAnotherProcess(file)).toBe(1);
        expect(existsSync(`${file}-wal`)).toBe(true);
        db.prepare('INSERT INTO t VALUES (2)').run();
        again.prepare('INSERT INTO t VALUES (3)').run();
        expect(countFromAnotherProcess(file)).toBe(3);
      } finally {
        again.close();
        db.close();
      }
      // Closed by all, the file holds every commit.
      expect(countFromAnotherProcess(file)).toBe(3);
    });
  }
});
