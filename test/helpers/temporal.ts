import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import {
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type WorkerOptions,
} from '@temporalio/worker';
import { inject } from 'vitest';
import { connectionWorkflowId } from '../../workflows/connection-types.js';

/** A client and a worker factory on the shared dev server, each test on its own task queue. */
export interface TemporalHarness {
  client: Client;
  connection: Connection;
  nativeConnection: NativeConnection;
  bundlePath: string;
  taskQueue(): string;
  /** Runs fn while a worker with these activities polls taskQueue; stops it afterwards. */
  withWorker<T>(
    options: { taskQueue: string; activities: object } & Partial<WorkerOptions>,
    fn: (worker: Worker) => Promise<T>,
  ): Promise<T>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

export async function connectTemporal(): Promise<TemporalHarness> {
  if (!runtimeInstalled) {
    // Keep test output readable: only the SDK's warnings and errors.
    Runtime.install({ logger: new DefaultLogger('WARN') });
    runtimeInstalled = true;
  }
  const address = inject('temporalAddress');
  const bundlePath = inject('workflowBundlePath');
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  const client = new Client({ connection });
  return {
    client,
    connection,
    nativeConnection,
    bundlePath,
    taskQueue: () => `test-${randomUUID()}`,
    async withWorker(options, fn) {
      const worker = await Worker.create({
        connection: nativeConnection,
        workflowBundle: { codePath: bundlePath },
        ...options,
      });
      return worker.runUntil(fn(worker));
    },
    async close() {
      await connection.close();
      await nativeConnection.close();
    },
  };
}

/**
 * A connection as `connectionGone` sees one (its workflow running on the shared dev server),
 * for tests of commands that only ask whether it exists: started on a task queue no worker
 * polls, so it never runs. The returned function terminates it.
 */
export async function standInConnection(
  name: string,
  taskQueue = `stand-in-${randomUUID()}`,
): Promise<() => Promise<void>> {
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  const handle = await client.workflow.start('connectionWorkflow', {
    workflowId: connectionWorkflowId(name),
    taskQueue,
    args: [],
  });
  return async () => {
    await handle.terminate('test over').catch(() => undefined);
    await connection.close();
  };
}
