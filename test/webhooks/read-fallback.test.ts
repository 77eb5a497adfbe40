import { join } from 'node:path';
import type { temporal as proto } from '@temporalio/proto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRecordActivities } from '../../activities/mirror/refresh-record.js';
import { recordHandOff } from '../../worker/record-hand-off.js';
import { recordWorkflowId } from '../../workflows/record-types.js';
import {
  closeRecordBed,
  destinationColumn,
  eventually,
  openRecordBed,
  type RecordBed,
} from './deliveries.js';

/**
 * A record's read first runs as a local activity inside the workflow task. When the service
 * keeps failing, the read must not retry there for long (each in-worker wait holds a task
 * slot): after 30 s it goes on as an ordinary activity, whose retries the server keeps, and
 * the change lands once the service answers again.
 */
const CONNECTION = 'fallback-shop';
const LEAD = '5';
// Unset only when opening failed, and closeRecordBed takes that.
let bed: RecordBed;

beforeAll(async () => {
  bed = await openRecordBed({ leads: 20, events: 1 }, 'ebsync-read-fallback-');
});

afterAll(() => closeRecordBed(bed));

type HistoryEvent = proto.api.history.v1.IHistoryEvent;

const activityTypes = (events: readonly HistoryEvent[]): string[] =>
  events.flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });

it('a read the service keeps failing goes on as an ordinary activity after 30 s, and lands when the service answers', async () => {
  const { ts, temporal, dir, deps } = bed;
  const taskQueue = temporal.taskQueue();
  const destinationFile = join(dir, 'mirror.db');
  const names = (): Map<string, unknown> =>
    destinationColumn(destinationFile, 'leads', 'first_name');
  const handOff = recordHandOff(temporal.client, { taskQueue, debounceMs: 100 });
  const handle = temporal.client.workflow.getHandle(recordWorkflowId(CONNECTION, 'leads', LEAD));
  const history = async (): Promise<HistoryEvent[]> => (await handle.fetchHistory()).events ?? [];

  await temporal.withWorker({ taskQueue, activities: createRecordActivities(deps) }, async () => {
    ts.sb.admin.setFaults({ errorRate: 1, errorStatuses: [503] });
    ts.sb.admin.patchRecord('lead', Number(LEAD), { first_name: 'After the outage' });
    const outageStart = Date.now();
    await handOff(
      {
        connectionId: CONNECTION,
        deliveryId: 'evt_fallback_1',
        resource: 'leads',
        recordId: LEAD,
        action: 'updated',
        occurredAt: null,
      },
      { secret: 'unused', destination: `sqlite:${destinationFile}` },
    );

    await eventually(
      async () => activityTypes(await history()).includes('refreshRecord'),
      90_000,
      'the read scheduled as an ordinary activity',
    );
    const waited = Date.now() - outageStart;
    const failedReads = ts.sb.admin.counters().faults_injected;
    // Several attempts in the worker first, and the hand-over within the local read's 30 s.
    expect(failedReads).toBeGreaterThanOrEqual(4);
    expect(waited).toBeLessThan(45_000);
    expect(names().get(LEAD)).not.toBe('After the outage');
    const described = await handle.describe();
    expect(described.status.name).toBe('RUNNING');

    ts.sb.admin.clearFaults();
    await eventually(
      () => names().get(LEAD) === 'After the outage',
      90_000,
      'the change applied once the service answers',
    );
  });
  // The whole outage cost one workflow, still healthy, and one ordinary read.
  const events = await history();
  expect(activityTypes(events).filter((t) => t === 'refreshRecord')).toHaveLength(1);
  expect(events.some((e) => e.workflowExecutionFailedEventAttributes)).toBe(false);
  await handle.terminate('test over');
}, 240_000);
