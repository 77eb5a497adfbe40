// Starts a TypeScript worker thread. Node 20 does not hand the main thread's module hooks
// (tsx, or vitest's) to workers, so this plain-JS entry registers tsx itself, then loads
// the module named in workerData.entry. A failure to start is reported the way that
// module's own errors are: a message { error } on workerData.port, then a bump of the shared
// counter workerData.signal, so a thread waiting on it synchronously wakes.
import { workerData } from 'node:worker_threads';

try {
  const { register } = await import('tsx/esm/api');
  register();
  await import(workerData.entry);
} catch (error) {
  workerData.port.postMessage({ error: `cannot start ${workerData.entry}: ${error}` });
  Atomics.add(workerData.signal, 0, 1);
  Atomics.notify(workerData.signal, 0);
}
