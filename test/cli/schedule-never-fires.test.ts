import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { ScheduleView } from '../../cli/schedule-views.js';
import type { StatusReport } from '../../cli/status-model.js';
import { runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';

/**
 * A schedule whose cron no date matches never fires: `create` refuses it paused or not,
 * `resume` does not resume one, and `ebsync status` does not call one that is active healthy.
 */
const CONNECTION = 'never-fires';
const NEVER = '0 3 31 2 *';

let stack: CliStack;
let env: Record<string, string>;
let temporal: Connection;

beforeAll(async () => {
  stack = await startCliStack({
    name: 'never-fires',
    sandbox: { seed: { leads: 5, events: 2 } },
    connect: CONNECTION,
  });
  ({ env } = stack);
  temporal = await Connection.connect({ address: inject('temporalAddress') });
}, 180_000);

afterAll(async () => {
  const list = await runCli(['schedule', 'list', '--connection', CONNECTION, '--json'], env);
  for (const v of JSON.parse(list.stdout || '[]') as ScheduleView[]) {
    await runCli(['schedule', 'delete', v.scheduleId], env);
  }
  await temporal?.close();
  await stack?.close();
});

const listed = async (): Promise<ScheduleView[]> => {
  const list = await runCli(['schedule', 'list', '--connection', CONNECTION, '--json'], env);
  expect(list.code, list.stderr).toBe(0);
  return JSON.parse(list.stdout) as ScheduleView[];
};

/** `ebsync schedule create --paused` of the connection, on `cron` in UTC. */
const createPaused = (cron: string) =>
  runCli(
    [
      'schedule',
      'create',
      '--cron',
      cron,
      '--timezone',
      'UTC',
      '--paused',
      '--connection',
      CONNECTION,
    ],
    env,
  );

/**
 * Gives a schedule a spec no date matches, as one created before `create` refused those
 * paused: through the raw service, so its sealed action and memo are kept as they are.
 */
async function neverFiringSpec(scheduleId: string): Promise<void> {
  const namespace = 'default';
  const d = await temporal.workflowService.describeSchedule({ namespace, scheduleId });
  await temporal.workflowService.updateSchedule({
    namespace,
    scheduleId,
    schedule: { ...d.schedule, spec: { cronString: [NEVER], timezoneName: 'UTC' } },
    conflictToken: d.conflictToken,
    requestId: randomUUID(),
    identity: 'schedule-never-fires.test',
  });
}

describe('a schedule that never fires', { timeout: 120_000 }, () => {
  it('create --paused refuses it as create does unpaused: one line, exit 2, none left', async () => {
    const result = await createPaused(NEVER);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toBe(
      `ebsync: --cron '${NEVER}' never fires (no date matches it in UTC); no schedule was created\n`,
    );
    expect(result.stdout).toBe('');
    expect(await listed()).toEqual([]);
  });

  it('resume says it would never fire, exits 1 and leaves it paused', async () => {
    const created = await createPaused('0 3 * * *');
    expect(created.code, created.stderr).toBe(0);
    const id = /^created schedule (\S+):/.exec(created.stdout)?.[1] ?? '';
    expect(id).toBe(`sync-${CONNECTION}-all-incremental`);
    await neverFiringSpec(id);

    const resumed = await runCli(['schedule', 'resume', id], env);
    expect(resumed.code, resumed.stderr).toBe(1);
    expect(resumed.stdout).toBe('');
    expect(resumed.stderr).toBe(
      `ebsync: ${id} would never fire: Temporal finds no date its spec matches; not resumed (it stays paused): 'ebsync schedule delete ${id}' removes it\n`,
    );
    const [view] = await listed();
    expect(view?.paused).toBe(true);
  });

  it('status: paused it is no problem; active with no next run, it never runs: exit 1', async () => {
    const id = `sync-${CONNECTION}-all-incremental`;

    // Paused, it is no problem: it is meant not to run.
    const paused = await runCli(['status', '--json'], env);
    expect(paused.code, paused.stderr).toBe(0);

    // Resumed behind ebsync's back (the Temporal UI, or an older ebsync): active, yet it never runs.
    const client = new (await import('@temporalio/client')).Client({ connection: temporal });
    await client.schedule.getHandle(id).unpause('resumed by the test');
    const status = await runCli(['status'], env);
    expect(status.code, status.stderr).toBe(1);
    expect(status.stdout).not.toContain('All healthy.');
    expect(status.stdout).toContain(`${id}  cron '0 3 * * *' (UTC)  next never`);
    const line = `schedule ${id}: active but never runs: Temporal finds no date its spec matches; 'ebsync schedule delete ${id}' removes it`;
    expect(status.stdout).toContain(`  ${line}`);
    const json = await runCli(['status', '--json'], env);
    expect(json.code, json.stderr).toBe(1);
    const report = JSON.parse(json.stdout) as StatusReport;
    expect(report.problems).toContainEqual({
      connectionId: CONNECTION,
      kind: 'schedule_never_runs',
      message: line,
    });
  });
});
