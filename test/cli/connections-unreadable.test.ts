import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { dataConverter, generateKeyLine } from '../../worker/data-converter.js';
import { runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';

/**
 * A connection workflow this deployment's keys cannot open, on its own task queue: what a user
 * has after making the data directory again (new development keys) while Temporal kept the
 * workflows the old keys sealed. `ebsync connections` and `ebsync status` failed whole on it,
 * with the decryption error and no word of the connections that do answer.
 */
let stack: CliStack;
let connection: Connection;
const foreignId = `foreign-${randomUUID()}`;

beforeAll(async () => {
  stack = await startCliStack({ name: 'connections-unreadable', connect: 'mine' });
  connection = await Connection.connect({ address: inject('temporalAddress') });
  const sealedOtherwise = loadConfig({
    ...stack.env,
    EBSYNC_DATA_DIR: `${stack.dir}/old-data`,
    EBSYNC_ENCRYPTION_KEYS: generateKeyLine('dev1'),
  });
  await new Client({ connection, dataConverter: dataConverter(sealedOtherwise) }).workflow.start(
    'connectionWorkflow',
    {
      workflowId: `connection-${foreignId}`,
      taskQueue: stack.env.TEMPORAL_TASK_QUEUE!,
      args: [{ connectionId: foreignId }],
    },
  );
}, 180_000);

afterAll(async () => {
  await new Client({ connection }).workflow
    .getHandle(`connection-${foreignId}`)
    .terminate('test over')
    .catch(() => undefined);
  await connection?.close();
  await stack?.close();
});

describe('a connection whose workflow cannot be read', () => {
  it('is named with why by `ebsync connections`, which still lists the others and exits 1', async () => {
    const listed = await runCli(['connections'], stack.env, 60_000);
    expect(listed.code, listed.stderr).toBe(1);
    expect(listed.stdout).toMatch(/^mine +active +integration_key/m);
    expect(listed.stdout).not.toContain(foreignId);
    expect(listed.stderr).toMatch(
      new RegExp(
        `^ebsync: connection ${foreignId}: its status could not be read from its workflow 'connection-${foreignId}': it was sealed with encryption keys this deployment lacks .*; give the workers the keys that sealed it, or, those keys gone, end it: temporal workflow terminate --workflow-id 'connection-${foreignId}'$`,
        'm',
      ),
    );
    expect(listed.stderr.trim().split('\n')).toHaveLength(1);
  });

  it("tells a command given another data dir than its worker to use the worker's, not to end the workflow", async () => {
    // A fresh data dir: the command makes a key file of its own, which opens none of the
    // workflows the running worker (with the stack's data dir) runs fine.
    const elsewhere = `${stack.dir}/other-data`;
    const listed = await runCli(
      ['connections'],
      { ...stack.env, EBSYNC_DATA_DIR: elsewhere },
      60_000,
    );
    expect(listed.code, listed.stderr).toBe(1);
    const line = listed.stderr.split('\n').find((l) => l.includes('connection mine:'));
    expect(line).toMatch(
      new RegExp(
        `it was sealed with encryption keys this command lacks \\(its keys: in ${elsewhere}/encryption-keys, made by this command \\(EBSYNC_DATA_DIR\\)\\), and ebsync-worker \\d+@\\S+, polling task queue '${stack.env.TEMPORAL_TASK_QUEUE}', holds other keys than this command: run the command with the workers' EBSYNC_DATA_DIR`,
      ),
    );
    expect(listed.stderr).not.toContain('terminate');
  });

  it('leaves `ebsync sync` without --connection asking which one, the unreadable one said', async () => {
    const sync = await runCli(
      ['sync', 'leads', '--to', `sqlite:${stack.dir}/never.db`],
      stack.env,
      60_000,
    );
    expect(sync.code, sync.stderr).toBe(2);
    const lines = sync.stderr.trim().split('\n');
    expect(lines[0]).toBe(
      `ebsync: several connections (${[foreignId, 'mine'].sort().join(', ')}): choose one with --connection ID`,
    );
    expect(lines.slice(1).join('\n')).toMatch(
      new RegExp(
        `^ebsync: connection ${foreignId}: its status could not be read .*sealed with encryption keys`,
      ),
    );
    // Nothing was started: the file was not made.
    expect(existsSync(`${stack.dir}/never.db`)).toBe(false);
  });

  it('is refused by `ebsync sync --connection`, nothing started', async () => {
    const sync = await runCli(
      ['sync', 'leads', '--connection', foreignId, '--to', `sqlite:${stack.dir}/sealed.db`],
      stack.env,
      60_000,
    );
    expect(sync.code, sync.stderr).toBe(1);
    expect(sync.stderr.trim().split('\n')).toHaveLength(1);
    expect(sync.stderr).toMatch(
      new RegExp(
        `^ebsync: connection ${foreignId}: its status could not be read .*sealed with encryption keys this deployment lacks.*; nothing was started$`,
        'm',
      ),
    );
    // Before it, the pass was started and retried without end, its command waiting.
    expect(existsSync(`${stack.dir}/sealed.db`)).toBe(false);
  });

  it('is a row and a problem of `ebsync status`, beside the connections that answer', async () => {
    const json = await runCli(['status', '--json'], stack.env, 60_000);
    expect(json.code, json.stderr).toBe(1);
    const report = JSON.parse(json.stdout) as {
      connections: { connectionId: string; state: string; lastError: string | null }[];
      problems: { connectionId: string; kind: string }[];
    };
    const byId = new Map(report.connections.map((c) => [c.connectionId, c]));
    expect(byId.get('mine')?.state).toBe('active');
    expect(byId.get(foreignId)?.state).toBe('not_answering');
    expect(byId.get(foreignId)?.lastError).toMatch(
      /could not be read.*sealed with encryption keys this deployment lacks/,
    );
    expect(report.problems).toContainEqual(
      expect.objectContaining({ connectionId: foreignId, kind: 'not_answering' }),
    );
  });
});
