import { Worker } from 'node:worker_threads';
import type { Acceptance, Notice } from './inbox.js';
import type { WriteAnswer, WriteRequest } from './sqlite-inbox-writer.js';

/** The thread's failure as the error its database call threw, so it types the same. */
function errorOf(answer: { message: string; code: string | undefined }): Error {
  return Object.assign(new Error(answer.message), answer.code ? { code: answer.code } : {});
}

/**
 * Commits groups of notices on a thread of their own (store/sqlite-inbox-writer.ts): one
 * group at a time, answered in order. A thread that dies fails the groups on their way, and
 * the next group starts a new one.
 */
export class InboxWriterThread {
  private worker: Worker | undefined;
  private next = 0;
  private readonly waiting = new Map<
    number,
    { resolve(results: Acceptance[]): void; reject(error: unknown): void }
  >();

  constructor(private readonly file: string) {}

  write(notices: readonly Notice[]): Promise<Acceptance[]> {
    const worker = this.started();
    const id = (this.next += 1);
    return new Promise<Acceptance[]>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, notices, at: Date.now() } satisfies WriteRequest);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // Held while it closes, or a process with nothing else to do would leave before it has.
    worker.ref();
    worker.postMessage('close');
    await exited;
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const url = new URL(
      import.meta.url.endsWith('.ts') ? './sqlite-inbox-writer.ts' : './sqlite-inbox-writer.js',
      import.meta.url,
    );
    const worker = new Worker(url, {
      workerData: { file: this.file },
      // Compiled, the thread inherits this process's flags as Node passes them on. Run from
      // source (tsx, or a test runner's own hooks, which threads do not get), it registers tsx
      // itself, and nothing else is given: Node refuses a thread given V8 flags explicitly,
      // and a worker's process has some (cli/ebsync.js, --max-semi-space-size), so passing
      // process.execArgv made every delivery to the receiver of 'ebsync dev' a 503.
      ...(url.pathname.endsWith('.ts') ? { execArgv: ['--import', 'tsx'] } : {}),
    });
    // The receiver's requests keep the process alive, not the thread.
    worker.unref();
    worker.on('message', (answer: WriteAnswer) => {
      const waiter = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      if (!waiter) return;
      if ('results' in answer) waiter.resolve(answer.results);
      else waiter.reject(errorOf(answer.error));
    });
    const fail = (error: unknown): void => {
      if (this.worker === worker) this.worker = undefined;
      for (const waiter of this.waiting.values()) waiter.reject(error);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => {
      if (this.waiting.size > 0) fail(new Error(`the inbox's writer thread ended (code ${code})`));
      else if (this.worker === worker) this.worker = undefined;
    });
    this.worker = worker;
    return worker;
  }
}
