import { parentPort } from 'node:worker_threads';
import Database from 'better-sqlite3';

/**
 * The thread that copies SQLite mirror files' write-ahead logs into the files
 * (store/sqlite-checkpoints.ts starts it and says why). One connection per file it is told
 * of; a checkpoint a while after commits, PASSIVE: it never waits for the writer or a reader,
 * and copies what no reader still needs. It imports nothing of ebsync's: a thread that loaded
 * the configuration's modules (sqlite-files.ts does) took 18 MiB more of the worker's memory.
 */
export type CheckpointMessage =
  | { kind: 'open'; id: number; file: string }
  | { kind: 'committed'; id: number }
  | { kind: 'close'; id: number };

/** How long after a commit the log is copied: one copy serves the commits of that while. */
const AFTER_COMMIT_MS = 200;

/** By registration (two writers of one file have one each). */
const files = new Map<number, { db: Database.Database | undefined; due: boolean }>();
let timer: NodeJS.Timeout | undefined;

function checkpointDue(): void {
  timer = undefined;
  for (const state of files.values()) {
    if (!state.due || !state.db) continue;
    state.due = false;
    try {
      state.db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // The file was removed or is locked for a moment: the next commit asks again, and the
      // writer's own close copies what is left.
    }
  }
}

function closeFile(id: number): void {
  const state = files.get(id);
  files.delete(id);
  try {
    // The last connection to close copies the whole log and removes it: the writer's or this.
    state?.db?.close();
  } catch {
    // Nothing of it is needed any more.
  }
}

parentPort?.on('message', (message: CheckpointMessage) => {
  switch (message.kind) {
    case 'open': {
      let db: Database.Database | undefined;
      try {
        // The writer made the file (private, in WAL mode). NORMAL, as the writer's connection:
        // a checkpoint syncs the log before it copies and the file after.
        db = new Database(message.file, { fileMustExist: true });
        db.pragma('synchronous = NORMAL');
        // Checkpoints copy frames through no page cache of this connection.
        db.pragma('cache_size = -256');
      } catch {
        // Not openable from here (removed meanwhile): nothing to copy into.
      }
      files.set(message.id, { db, due: false });
      return;
    }
    case 'committed': {
      const state = files.get(message.id);
      if (!state) return;
      state.due = true;
      timer ??= setTimeout(checkpointDue, AFTER_COMMIT_MS);
      return;
    }
    case 'close':
      closeFile(message.id);
      if (files.size === 0 && timer) {
        clearTimeout(timer);
        timer = undefined;
      }
      return;
  }
});
