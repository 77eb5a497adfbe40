import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { UserError } from '../../cli/errors.js';
import { requireOwnKeys } from '../../cli/server-keys.js';
import { loadConfig } from '../../config/index.js';
import { dataConverter, generateKeyLine } from '../../worker/data-converter.js';
import { CliProcess, runCli } from '../helpers/cli.js';

/**
 * A second `npm start` from another data directory, on the Temporal server the first one
 * started: its dev key cannot open the first one's workflows, so its worker must not join
 * their task queue (it would take their tasks and fail each one). It says so in one line.
 */
let dir: string;
let connection: Connection;
const taskQueue = `foreign-keys-${randomUUID()}`;
const theirKey = generateKeyLine('dev1');
const workflowId = `connection-foreign-${randomUUID()}`;

const configWith = (keys: string) =>
  loadConfig({
    EBSYNC_DATA_DIR: join(dir, 'config'),
    EBSYNC_ENCRYPTION_KEYS: keys,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
  });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-foreign-keys-'));
  connection = await Connection.connect({ address: inject('temporalAddress') });
  // The first ebsync's workflow, sealed with its key, on a queue no worker polls.
  const theirs = new Client({ connection, dataConverter: dataConverter(configWith(theirKey)) });
  await theirs.workflow.start('connectionWorkflow', {
    workflowId,
    taskQueue,
    args: [{ connectionId: 'foreign' }],
  });
});

afterAll(async () => {
  await new Client({ connection }).workflow
    .getHandle(workflowId)
    .terminate('test over')
    .catch(() => undefined);
  await connection.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A command of another data directory (its own keys) on the server and queue above. */
const onTheServer = (dataDir: string, extra: Record<string, string>): Record<string, string> => ({
  TEMPORAL_ADDRESS: inject('temporalAddress'),
  TEMPORAL_TASK_QUEUE: taskQueue,
  EBSYNC_DATA_DIR: join(dir, dataDir),
  ...extra,
});

describe('ebsync dev on a Temporal server another data directory uses', () => {
  it('exits 1 with one line naming the workflow and what to do, before any worker starts', async () => {
    const result = await runCli(
      ['dev'],
      onTheServer('second', { EBSYNC_WEBHOOK_PORT: '0', EBSYNC_STATUS_PORT: '0' }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([
      `ebsync: the Temporal server at ${inject('temporalAddress')} already runs ebsync workflows on task queue '${taskQueue}' that this data directory's keys cannot open ('${workflowId}': another ebsync, with another EBSYNC_DATA_DIR, uses that server); stop that one, run this one from the same data directory, or give it a server of its own (npm start -- --port 7243)`,
    ]);
    expect(result.stdout).not.toMatch(/worker start/);
    expect(result.stdout).not.toMatch(/DEMO DATA/);
  });

  it('ebsync worker starts all the same, and says once which workflow its keys cannot open', async () => {
    const worker = new CliProcess(['worker'], onTheServer('worker', { EBSYNC_LOG_FORMAT: 'json' }));
    try {
      const warned = await worker.waitForLine(/sealed with keys this worker lacks/, 90_000);
      expect(JSON.parse(warned)).toMatchObject({
        level: 40,
        workflowId,
        taskQueue,
        msg: expect.stringContaining(
          `workflows running on this task queue were sealed with keys this worker lacks ('${workflowId}' among them)`,
        ) as unknown,
      });
      await worker.waitForLine(/worker started/, 90_000);
    } finally {
      expect((await worker.stop('SIGTERM', 60_000)).code).toBe(0);
    }
  });

  it('lets through the keys that sealed them, and refuses others', async () => {
    const client = new Client({ connection });
    await expect(requireOwnKeys(client, configWith(theirKey))).resolves.toBeUndefined();
    // Their key's id, another key: what a second data directory's dev key is.
    await expect(requireOwnKeys(client, configWith(generateKeyLine('dev1')))).rejects.toThrow(
      UserError,
    );
    // Keys that were rotated keep opening: the old key listed after a new one.
    await expect(
      requireOwnKeys(client, configWith(`${generateKeyLine('k2')},${theirKey}`)),
    ).resolves.toBeUndefined();
  });
});
