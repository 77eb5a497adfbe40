import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openDestination } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import { checkpointInBackground, stopCheckpointThread } from '../../store/sqlite-checkpoints.js';
import { openMirrorFile } from '../../store/sqlite-files.js';
import { leadRecord } from '../destinations/destination-suite.js';

const dir = mkdtempSync(join(tmpdir(), 'ebsync-checkpoints-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The rows of `table` the file itself holds, without its write-ahead log: a copy of the file
 * alone opens with an empty log, so it shows only what was copied (checkpointed) into it.
 */
function rowsInFileAlone(file: string, table: string): number {
  const copy = `${file}.alone-${Math.random().toString(36).slice(2)}`;
  copyFileSync(file, copy);
  const db = new Database(copy, { readonly: true });
  try {
    return db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${table}`).get()!.n;
  } catch {
    return 0;
  } finally {
    db.close();
    rmSync(copy, { force: true });
  }
}

const WAIT = { timeout: 10_000, interval: 50 };

describe('the SQLite mirror file: its log copied on a thread', () => {
  it('copies a few commits into the file soon after, which SQLite alone does only at 1,000 pages', async () => {
    const file = join(dir, 'mirror.db');
    const destination = openDestination(databaseOpeners, `sqlite:${file}`);
    await destination.ensureTable('leads');
    for (let batch = 0; batch < 3; batch++) {
      await destination.upsert(
        'leads',
        Array.from({ length: 10 }, (_, i) => leadRecord(String(batch * 10 + i + 1))),
      );
    }
    // A few pages: SQLite would leave them in the log until it held 1,000.
    await vi.waitFor(() => expect(rowsInFileAlone(file, 'leads')).toBe(30), WAIT);
    await destination.close();
    // The thread's connection was the last one or the writer's was: either copied all and
    // removed the log.
    await vi.waitFor(() => expect(existsSync(`${file}-wal`)).toBe(false), WAIT);
    expect(rowsInFileAlone(file, 'leads')).toBe(30);
  });

  it('leaves SQLite its own copies in a file the writer holds in memory, and after the thread ended', async () => {
    const memory = new Database(':memory:');
    checkpointInBackground(memory, ':memory:');
    expect(memory.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    memory.close();

    const file = join(dir, 'writer.db');
    const db = openMirrorFile(file);
    const checkpoints = checkpointInBackground(db, file);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    db.exec('CREATE TABLE t (x INTEGER)');
    db.prepare('INSERT INTO t VALUES (1)').run();
    checkpoints.committed();
    await vi.waitFor(() => expect(rowsInFileAlone(file, 't')).toBe(1), WAIT);

    // A thread that ends (here, stopped) hands the copies back to SQLite in every writer it
    // served, and later writers keep them: a log never grows without end.
    await stopCheckpointThread();
    await vi.waitFor(
      () => expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000),
      WAIT,
    );
    const later = openMirrorFile(join(dir, 'later.db'));
    checkpointInBackground(later, join(dir, 'later.db'));
    expect(later.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    later.close();
    checkpoints.close();
    db.close();
  });
});
