import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { CheckpointMessage } from './sqlite-checkpointer.js';

/**
 * Copies an SQLite mirror file's write-ahead log into the file on a thread of its own
 * (store/sqlite-checkpointer.ts), not in the commit that fills the log.
 *
 * SQLite copies the log itself once it holds 1,000 pages, inside the commit that took it there:
 * the copy and its two fsyncs then stall the worker's event loop, where the mirror parses,
 * hashes and writes. Those copies grow with the file (the pages a batch touches spread over
 * more of it). Upserting 100,000 leads with their bookings into one file took 6.0 to 6.7 s
 * with them inline and 4.8 to 5.2 s with the copies on a thread (two rounds each, this machine).
 * The same fsyncs happen, so a commit is as durable as before.
 */
export interface BackgroundCheckpoints {
  /** A transaction was committed: the log is copied a moment later. */
  committed(): void;
  /** No more commits come through this connection: the thread closes its own. */
  close(): void;
}

/** SQLite's own threshold (pages in the log), given back to a writer if the thread fails. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;

const INLINE: BackgroundCheckpoints = { committed: () => undefined, close: () => undefined };

let thread: Worker | undefined;
/** The thread failed once in this process: SQLite copies inline again, as it always did. */
let failed = false;
let next = 0;
/** The writers whose copies the thread makes, by registration. */
const writers = new Map<number, Database.Database>();

/** A writer's copies made inline again: the thread is gone. */
function inlineAgain(): void {
  for (const db of writers.values()) {
    try {
      if (db.open) db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
    } catch {
      // A connection closing meanwhile copies the log itself.
    }
  }
  writers.clear();
}

function checkpointThread(): Worker | undefined {
  if (thread || failed) return thread;
  const url = new URL(
    import.meta.url.endsWith('.ts') ? './sqlite-checkpointer.ts' : './sqlite-checkpointer.js',
    import.meta.url,
  );
  let worker: Worker;
  try {
    worker = new Worker(url, {
      // Run from source (tsx, a test runner's hooks, which threads do not get) it registers tsx
      // itself; compiled, it inherits this process's flags (see sqlite-inbox-thread.ts).
      ...(url.pathname.endsWith('.ts') ? { execArgv: ['--import', 'tsx'] } : {}),
    });
  } catch {
    failed = true;
    return undefined;
  }
  // The commits keep the process alive, not the thread.
  worker.unref();
  const lost = (): void => {
    if (thread !== worker) return;
    thread = undefined;
    failed = true;
    inlineAgain();
  };
  worker.on('error', lost);
  worker.on('exit', lost);
  thread = worker;
  return worker;
}

/**
 * Has the thread copy `file`'s log, written through `db`: SQLite's own copies in `db`'s
 * commits are turned off. Where no thread can run (an in-memory database, a thread that
 * failed) the copies stay inline.
 */
export function checkpointInBackground(db: Database.Database, file: string): BackgroundCheckpoints {
  if (file === ':memory:') return INLINE;
  const worker = checkpointThread();
  if (!worker) return INLINE;
  const id = (next += 1);
  const post = (message: CheckpointMessage): void => worker.postMessage(message);
  db.pragma('wal_autocheckpoint = 0');
  writers.set(id, db);
  post({ kind: 'open', id, file });
  return {
    committed: () => {
      if (thread === worker && writers.has(id)) post({ kind: 'committed', id });
    },
    close: () => {
      if (!writers.delete(id)) return;
      if (thread === worker) post({ kind: 'close', id });
    },
  };
}

/** Ends the thread (tests: a thread that fails); writers copy inline from then on. */
export async function stopCheckpointThread(): Promise<void> {
  const worker = thread;
  if (!worker) return;
  await worker.terminate();
}
