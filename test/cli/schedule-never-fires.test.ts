import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { ScheduleView } from '../../cli/schedule-views.js';
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

describe('a schedule that never fires', { timeout: 120_000 }, () => {
  it('create --paused refuses it as create does unpaused: one line, exit 2, none left', async () => {
    const result = await runCli(
      [
        'schedule',
        'create',
        '--cron',
        NEVER,
        '--timezone',
        'UTC',
        '--paused',
        '--connection',
        CONNECTION,
      ],
      env,
    );
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toBe(
      `ebsync: --cron '${NEVER}' never fires (no date matches it in UTC); no schedule was created\n`,
    );
    expect(result.stdout).toBe('');
    expect(await listed()).toEqual([]);
  });
});
