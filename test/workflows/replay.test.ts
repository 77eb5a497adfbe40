import { readFileSync, readdirSync } from 'node:fs';
import { basename } from 'node:path';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { historyFromJSON } from '../helpers/history-json.js';

/**
 * Every committed history (test/fixtures/histories/*.json, written by
 * test/fixtures/record-histories.ts) must replay on the current workflow code: a change that
 * would break workflows already running in production fails here.
 */
const dir = new URL('../fixtures/histories/', import.meta.url);
const files = readdirSync(dir)
  .filter((name) => name.endsWith('.json'))
  .sort();

function loadHistory(file: string): History {
  return historyFromJSON(JSON.parse(readFileSync(new URL(file, dir), 'utf8')));
}

/** Replays with the bundle the global setup built from workflows/ (the current code). */
function replay(history: History, workflowId: string): Promise<void> {
  return Worker.runReplayHistory(
    { workflowBundle: { codePath: inject('workflowBundlePath') } },
    history,
    workflowId,
  );
}

beforeAll(() => {
  // Quiet: the determinism violation provoked below would otherwise print core's warning.
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: {
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'ERROR' }) },
    },
  });
});

describe('recorded workflow histories', () => {
  it('are there to replay', () => {
    expect(files).toContain('health-check.json');
  });

  it.each(files)('%s replays on the current workflow code', async (file) => {
    const history = loadHistory(file);
    expect(history.events?.length).toBeGreaterThan(0);
    // The recorder used the file name as workflow id.
    await expect(replay(history, basename(file, '.json'))).resolves.toBeUndefined();
  });

  it('a history the code does not match fails with a determinism violation', async () => {
    // The same history, but as if an earlier version had scheduled a different activity.
    const history = loadHistory('health-check.json');
    const scheduled = history.events?.find((event) => event.activityTaskScheduledEventAttributes);
    const attributes = scheduled?.activityTaskScheduledEventAttributes;
    if (!attributes) throw new Error('health-check.json schedules no activity');
    expect(attributes.activityType?.name).toBe('reportWorkerHealth');
    attributes.activityType = { name: 'reportWorkerHealthV0' };
    await expect(replay(history, 'health-check')).rejects.toThrow(DeterminismViolationError);
  });
});
