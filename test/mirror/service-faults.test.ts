import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { sandboxMirrorDeps } from '../fixtures/sandbox-mirror-deps.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { chainHistory, failedRuns } from './run-histories.js';
import { expectMirrorOfSource } from './source-truth.js';

const LEADS = 5_000;
const REACH = 1_000;
const PER = 100;

let ts: TestSandbox;
let temporal: TemporalHarness;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-faults-'));
  ts = await startTestSandbox({ https: true, reachLimit: REACH, seed: { leads: LEADS } });
  temporal = await connectTemporal();
}, 240_000);

afterAll(async () => {
  await temporal?.close();
  await ts?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a pass while the service answers 10% of requests with 5xx and drops 5%', () => {
  it('completes by retrying, and the destination equals the source', async () => {
    ts.sb.admin.setFaults({ errorRate: 0.1, errorStatuses: [500, 502, 503], dropRate: 0.05 });
    const deps = sandboxMirrorDeps({
      baseUrl: ts.sb.baseUrl,
      apiKey: ts.sb.apiKey,
      ca: readFileSync(ts.sb.caFile ?? ''),
      ledger: `sqlite:${join(dir, 'store.db')}`,
      reachLimit: REACH,
      per: PER,
    });
    const destination = `sqlite:${join(dir, 'mirror.db')}`;
    const taskQueue = temporal.taskQueue();
    const workflowId = `mirror-faults-${taskQueue}`;
    try {
      const handle = await temporal.withWorker(
        {
          taskQueue,
          activities: createMirrorActivities(deps),
          maxConcurrentActivityTaskExecutions: 8,
        },
        async () => {
          const started = await temporal.client.workflow.start(mirrorWorkflow, {
            taskQueue,
            workflowId,
            args: [
              {
                connectionId: 'c1',
                destination,
                subjects: ['leads', 'events', 'appointments'],
                mode: 'full',
              },
            ],
          });
          await started.result();
          return started;
        },
      );
      const summary = await handle.result();
      // The faults really happened, on the order the rates say.
      expect(ts.sb.ctx.counters.faultsInjected).toBeGreaterThan(summary.counts.requests / 20);
      const runs = await chainHistory(temporal.client, workflowId, handle.firstExecutionRunId);
      expect(failedRuns(runs)).toEqual([]);
      ts.sb.admin.clearFaults();
      await expectMirrorOfSource(ts.sb, destination, summary);
      expect(ts.internalErrors).toEqual([]);
    } finally {
      ts.sb.admin.clearFaults();
      await deps.close();
    }
  }, 600_000);
});
