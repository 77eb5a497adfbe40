import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { recordWorkflow } from '../../workflows/record.js';
import { recordChangeSignal, recordWorkflowId } from '../../workflows/record-types.js';
import { drainWorkflowId } from '../../workflows/drain-types.js';
import { historyText } from '../helpers/history-text.js';
import {
  closeRecordBed,
  destinationColumn,
  eventually,
  openRecordBed,
  webhookActivities,
  type RecordBed,
} from './deliveries.js';

/**
 * Upgrading from the per-record design: a `recordWorkflow` running when a worker of this
 * version starts (started here as the earlier receiver started them, by signal-with-start)
 * gets its read answered by the hand-over: the notice goes to the connection's inbox, the
 * drain applies it, and the record workflow ends after its quiet spell without ever holding
 * the record in its history.
 */
const CONNECTION = 'migration-shop';
let bed: RecordBed;

beforeAll(async () => {
  bed = await openRecordBed({ leads: 20, events: 1 }, 'ebsync-webhooks-migration-');
});

afterAll(() => closeRecordBed(bed));

it('a per-record workflow of the earlier design hands its read to the drain, holds no record, and ends', async () => {
  const { ts, temporal, dir, deps } = bed;
  const taskQueue = temporal.taskQueue();
  const destinationFile = join(dir, 'mirror.db');
  const names = () => destinationColumn(destinationFile, 'leads', 'first_name');
  const emails = () => destinationColumn(destinationFile, 'leads', 'email');
  await temporal.withWorker(
    { taskQueue, activities: webhookActivities(deps, temporal.client, taskQueue) },
    async () => {
      ts.sb.admin.patchRecord('lead', 8, { first_name: 'Migrated' });
      const handle = await temporal.client.workflow.signalWithStart(recordWorkflow, {
        taskQueue,
        workflowId: recordWorkflowId(CONNECTION, 'leads', '8'),
        args: [
          {
            connectionId: CONNECTION,
            destination: `sqlite:${destinationFile}`,
            resource: 'leads',
            recordId: '8',
            debounceMs: 100,
            idleMs: 3_000,
          },
        ],
        signal: recordChangeSignal,
        signalArgs: [{ deliveryId: 'evt_old_1', action: 'updated', occurredAt: null }],
      });
      await eventually(() => names().get('8') === 'Migrated', 60_000, 'the edit applied');
      // It ends on its own after its quiet spell, having read once (by hand-over).
      expect(await handle.result()).toMatchObject({ reads: 1, notices: 1 });

      const history = await handle.fetchHistory();
      const text = await historyText(history);
      expect(text).toContain('refreshRecord');
      expect(text).not.toContain('Migrated');
      expect(text).not.toContain(String(emails().get('8')));
      const notices = await (await deps.inbox()).stats(3_600_000);
      expect(notices.find((s) => s.connectionId === CONNECTION)).toMatchObject({
        pending: 0,
        drained: 1,
      });
      const drain = temporal.client.workflow.getHandle(drainWorkflowId(CONNECTION));
      await drain.terminate('test over');
    },
  );
}, 180_000);
