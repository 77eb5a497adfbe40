import { workerData, type MessagePort } from 'node:worker_threads';
import { generateLeads, type LeadJob, type WorkerMessage } from './seed-leads.js';

/**
 * The worker side of generateLeadsOnWorker: generates the job's leads and posts each batch
 * of rows, bumping the shared counter after every message so the waiting thread wakes.
 */
const { job, port, signal } = workerData as {
  job: LeadJob;
  port: MessagePort;
  signal: Int32Array;
};

function send(message: WorkerMessage): void {
  port.postMessage(message);
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
}

try {
  send({ run: generateLeads(job, (rows, done) => send({ rows, done }), 1000) });
} catch (error) {
  send({ error: error instanceof Error ? error.message : String(error) });
}
