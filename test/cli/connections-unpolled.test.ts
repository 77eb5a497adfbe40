import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { dataConverter } from '../../worker/data-converter.js';
import { runCli } from '../helpers/cli.js';

/**
 * A running connection on a task queue no worker has polled lately (the worker stopped minutes
 * ago): `ebsync status` and the status page asked its workflow anyway, and waited out the whole
 * 10 s deadline for the answer no worker gives. They now see that no worker polls the queue
 * and say so without asking. (`ebsync connections` checks for a worker before listing.)
 */
const name = `unpolled-${Date.now()}`;
const workflowId = `connection-${name}`;
const queue = `unpolled-queue-${Date.now()}`;
let dir: string;
let env: Record<string, string>;
let connection: Connection;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-unpolled-'));
  env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: queue,
    EBSYNC_DATA_DIR: join(dir, 'data'),
  };
  connection = await Connection.connect({ address: inject('temporalAddress') });
  // Sealed with this deployment's own keys (its data dir's), so that the keys are no cause.
  const config = loadConfig({ ...process.env, ...env });
  await new Client({ connection, dataConverter: dataConverter(config) }).workflow.start(
    'connectionWorkflow',
    { workflowId, taskQueue: queue, args: [{ connectionId: name }] },
  );
}, 60_000);

afterAll(async () => {
  await new Client({ connection }).workflow
    .getHandle(workflowId)
    .terminate('test over')
    .catch(() => undefined);
  await connection?.close();
  rmSync(dir, { recursive: true, force: true });
});

const line = `the connection's workflow '${workflowId}' was not asked: no worker has polled task queue '${queue}' in the last 2 minutes; start one ('ebsync worker' or 'npm start') and try again`;

describe('a connection on a task queue no worker polls', () => {
  it('is shown by `ebsync status` as not answering, not asked, the line among its problems', async () => {
    const status = await runCli(['status'], env, 60_000);
    expect(status.code, status.stderr).toBe(1);
    expect(status.stdout).toMatch(new RegExp(`^  ${name}  not_answering  unknown`, 'm'));
    expect(status.stdout).toContain(`\n  connection ${name}: ${line}\n`);
    // The queue's own problem is said beside it.
    expect(status.stdout).toContain(`\n  no worker polls task queue '${queue}' on `);
  });
});
