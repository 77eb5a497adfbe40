import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteFile } from './sqlite-files.js';
import type { Acceptance, Notice } from './inbox.js';
import { noticeCommitter } from './sqlite-inbox-insert.js';

/**
 * The thread that commits the SQLite inbox's groups of notices (store/sqlite-inbox-thread.ts
 * starts it). better-sqlite3 waits for the fsync of synchronous FULL on the thread that
 * commits: here, so the receiver's event loop goes on verifying the next deliveries meanwhile,
 * and they make the next group. A delivery that comes alone is committed on the loop instead
 * (store/sqlite-inbox.ts says why).
 */
export interface WriteRequest {
  id: number;
  notices: readonly Notice[];
  /** Epoch ms the group is stored at. */
  at: number;
}

export type WriteAnswer =
  | { id: number; results: Acceptance[] }
  | { id: number; error: { message: string; code: string | undefined } };

const { file } = workerData as { file: string };
const db = openSqliteFile(file, 10_000, 'FULL');
const acceptAll = noticeCommitter(db);

parentPort?.on('message', (request: WriteRequest | 'close') => {
  if (request === 'close') {
    db.close();
    parentPort?.close();
    return;
  }
  let answer: WriteAnswer;
  try {
    answer = { id: request.id, results: acceptAll(request.notices, request.at) };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    answer = {
      id: request.id,
      error: {
        message: error instanceof Error ? error.message : String(error),
        code: typeof code === 'string' ? code : undefined,
      },
    };
  }
  parentPort?.postMessage(answer);
});
