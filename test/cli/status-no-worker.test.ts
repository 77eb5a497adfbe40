import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, inject, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

/**
 * `ebsync status` with no worker on its task queue: the report stands (what the store and
 * Temporal hold needs no worker), with the missing worker as its first problem. It used to
 * print only that line, once Temporal had forgotten the last poller (two minutes after the
 * worker stopped), so the inbox waiting behind it could not be seen from the terminal.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-status-no-worker-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('reports with no worker polling, the missing worker listed first among the problems', async () => {
  const queue = `never-polled-${randomUUID()}`;
  const env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: queue,
    EBSYNC_DATA_DIR: join(dir, 'data'),
  };
  const line = `no worker polls task queue '${queue}' on ${env.TEMPORAL_ADDRESS}; start one with 'npm start' (Temporal and a worker) or 'ebsync worker', then run this again`;
  const text = await runCli(['status'], env, 60_000);
  expect(text.code).toBe(1);
  expect(text.stdout).toContain(`1 problem:\n  ${line}\n`);
  expect(text.stderr).toBe('ebsync: 1 problem, listed at the end of the report\n');
  const json = await runCli(['status', '--json'], env, 60_000);
  expect(json.code).toBe(1);
  const report = JSON.parse(json.stdout) as { problems: { kind: string; message: string }[] };
  expect(report.problems).toEqual([{ connectionId: '', kind: 'no_worker', message: line }]);
  expect(json.stderr).toBe(`ebsync: ${line}\n`);
});
