import { readFileSync, readdirSync } from 'node:fs';
import { basename } from 'node:path';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { historyFromJSON } from '../helpers/history-json.js';
import { CONNECTION_SCENARIOS } from '../fixtures/connection-scenarios.js';
import { MIRROR_SCENARIOS, SCHEDULED_MIRROR_SCENARIOS } from '../fixtures/mirror-scenarios.js';
import { RECORD_SCENARIOS } from '../fixtures/record-scenarios.js';
import { DRAIN_SCENARIOS } from '../fixtures/drain-scenarios.js';

/**
 * Every committed history (test/fixtures/histories/*.json, written by
 * test/fixtures/record-histories.ts) must replay on the current workflow code: a change that
 * would break workflows already running in production fails here. docs/workflows.md says
 * how to change workflow code anyway (patched()) and when to re-record.
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
  it('are all there: the health check and every connection scenario, every run', () => {
    const expected = [
      'health-check',
      ...CONNECTION_SCENARIOS.map((c) => c.name),
      ...MIRROR_SCENARIOS.map((m) => m.name),
      ...SCHEDULED_MIRROR_SCENARIOS.map((m) => m.name),
      ...RECORD_SCENARIOS.map((r) => r.name),
      ...DRAIN_SCENARIOS.map((d) => d.name),
    ];
    expect(files.map((f) => basename(f, '.json').replace(/\.run-\d+$/, ''))).toEqual(
      expect.arrayContaining(expected),
    );
    // The continue-as-new scenario must have recorded the run it continued into.
    expect(files).toContain('connection-continue-as-new.run-2.json');
    expect(files).toContain('mirror-continue-as-new.run-2.json');
    expect(files).toContain('drain-batches.run-2.json');
  });

  it.each(files)('%s replays on the current workflow code', async (file) => {
    const history = loadHistory(file);
    expect(history.events?.length).toBeGreaterThan(0);
    // The recorder used the scenario name as workflow id (a later run adds .run-N).
    const workflowId = basename(file, '.json').replace(/\.run-\d+$/, '');
    const failure = await replay(history, workflowId).then(
      () => undefined,
      (error: unknown) =>
        error instanceof Error ? `${error.name}: ${error.message}` : JSON.stringify(error),
    );
    // The whole message, for the one who changed the workflow: which command, which event.
    if (failure !== undefined) expect.fail(failure);
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
