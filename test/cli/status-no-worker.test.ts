import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { listMirrorSchedules } from '../../cli/schedule-views.js';
import { EncryptionCodec } from '../../worker/codec.js';
import { findTemporalCli } from '../../worker/temporal-cli.js';
import { freePort, runCli } from '../helpers/cli.js';

/**
 * `ebsync status` with no worker on its task queue: the report stands (what the store and
 * Temporal hold needs no worker), with the missing worker as its first problem. It used to
 * print only that line, once Temporal had forgotten the last poller (two minutes after the
 * worker stopped), so the inbox waiting behind it could not be seen from the terminal.
 *
 * The namespace also holds mirror schedules of another deployment, sealed with a key of the
 * same id ('dev1', as every development data dir makes) but other bytes: the SDK's schedule
 * list decodes every memo and failed on it, and with it `status` and `schedule list`. The
 * test has a dev server of its own: the run's shared one holds whatever other files left
 * there (a schedule sealed otherwise among them, which is how CI found this), and the one
 * made here would reach their `schedule list` too.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-status-no-worker-'));
const scheduleId = `other-deployment-${randomUUID()}`;
/** As ebsync names a schedule of connection 'theirs'. */
const theirs = 'sync-theirs-leads-full';
/** Connection 'theirs-eu''s: its id begins as a schedule of 'theirs' would. */
const theirsEu = 'sync-theirs-eu-leads-full';
let server: TestWorkflowEnvironment | undefined;
let address = '';

beforeAll(async () => {
  const port = await freePort();
  address = `127.0.0.1:${port}`;
  server = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: await findTemporalCli(),
      port,
      ip: '127.0.0.1',
      log: { format: 'pretty', level: 'error' },
    },
  });
  const codec = new EncryptionCodec([{ id: 'dev1', key: randomBytes(32) }]);
  const other = new Client({
    connection: server.connection,
    dataConverter: { payloadCodecs: [codec] },
  });
  for (const id of [scheduleId, theirs, theirsEu]) {
    await other.schedule.create({
      scheduleId: id,
      spec: { intervals: [{ every: '1 hour' }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'scheduledMirrorWorkflow',
        taskQueue: `other-deployment-${randomUUID()}`,
        args: [],
      },
      memo: { ebsync: 'mirror', connectionId: 'theirs', what: 'leads', mode: 'full' },
      state: { paused: true },
    });
  }
});

afterAll(async () => {
  await server?.teardown();
  rmSync(dir, { recursive: true, force: true });
});

it('reports with no worker polling, the missing worker listed first among the problems', async () => {
  const queue = `never-polled-${randomUUID()}`;
  const env = {
    TEMPORAL_ADDRESS: address,
    TEMPORAL_TASK_QUEUE: queue,
    EBSYNC_DATA_DIR: join(dir, 'data'),
  };
  const line = `no worker polls task queue '${queue}' on ${env.TEMPORAL_ADDRESS}; start one with 'npm start' (Temporal and a worker) or 'ebsync worker', then run this again`;
  const text = await runCli(['status'], env, 60_000);
  expect(text.code, text.stderr).toBe(1);
  expect(text.stdout, text.stderr).toContain(`1 problem:\n  ${line}\n`);
  expect(text.stderr).toBe('ebsync: 1 problem, listed at the end of the report\n');
  const json = await runCli(['status', '--json'], env, 60_000);
  expect(json.code, json.stderr).toBe(1);
  const report = JSON.parse(json.stdout) as { problems: { kind: string; message: string }[] };
  expect(report.problems).toEqual([{ connectionId: '', kind: 'no_worker', message: line }]);
  expect(json.stderr).toBe(`ebsync: ${line}\n`);

  // `schedule list` lists what it can open, and those it could not as unreadable, by id, and
  // exits 1: it used to print "no schedules" and exit 0.
  const why = `cannot be opened with this process's EBSYNC_ENCRYPTION_KEYS (sealed with another key: another deployment's in this Temporal namespace, or a key no longer given): what it mirrors cannot be read; give this shell the key that sealed it, or give each deployment a namespace of its own (TEMPORAL_NAMESPACE)\n`;
  const list = await runCli(['schedule', 'list'], env, 60_000);
  expect(list.code, list.stderr).toBe(1);
  expect(list.stdout).toBe(
    `${scheduleId}  unreadable\n${theirsEu}  unreadable\n${theirs}  unreadable\n`,
  );
  expect(list.stderr).toBe(`ebsync: schedules '${scheduleId}', '${theirsEu}', '${theirs}' ${why}`);
  const listJson = await runCli(['schedule', 'list', '--json'], env, 60_000);
  expect(listJson.code, listJson.stderr).toBe(1);
  expect(JSON.parse(listJson.stdout)).toEqual([]);
  expect(listJson.stderr).toBe(list.stderr);
  // Under --connection, those whose id may be that connection's (`sync-<connection>-…`), not
  // another's whose name begins with it.
  const one = await runCli(['schedule', 'list', '--connection', 'theirs'], env, 60_000);
  expect(one.code, one.stderr).toBe(1);
  expect(one.stdout).toBe(`${theirs}  unreadable\n`);
  expect(one.stderr).toBe(`ebsync: schedule '${theirs}' ${why}`);
});

it('names a sealed schedule as unreadable for a client with no codec at all, too', async () => {
  // The converter then meets the sealed encoding itself (a ValueError, not a decryption
  // error): the shared run's status tests, with the harness's client, failed on one.
  const plain = new Client({ connection: server!.connection });
  const { views, sealed } = await listMirrorSchedules(plain);
  expect(views).toEqual([]);
  expect(sealed).toEqual([scheduleId, theirsEu, theirs]);
});
