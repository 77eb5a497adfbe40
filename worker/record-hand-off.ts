import type { Client } from '@temporalio/client';
import type { HandOff } from '../webhooks/receiver.js';
import { recordWorkflow } from '../workflows/record.js';
import { recordChangeSignal, recordWorkflowId } from '../workflows/record-types.js';

export interface RecordHandOffOptions {
  taskQueue: string;
  debounceMs: number;
  /** Quiet time after which a record's workflow ends (default: the workflow's own). */
  idleMs?: number;
  /** A hand-off that takes longer fails (and the sender is told to retry). */
  timeoutMs?: number;
}

/**
 * The receiver's hand-off: signal-with-start of the record's workflow. When it returns,
 * Temporal has the notice in history, so it survives this process.
 */
export function recordHandOff(client: Client, options: RecordHandOffOptions): HandOff {
  const timeoutMs = options.timeoutMs ?? 5_000;
  return async (delivery, hook) => {
    const workflowId = recordWorkflowId(
      delivery.connectionId,
      delivery.resource,
      delivery.recordId,
    );
    await client.connection.withDeadline(Date.now() + timeoutMs, () =>
      client.workflow.signalWithStart(recordWorkflow, {
        workflowId,
        taskQueue: options.taskQueue,
        args: [
          {
            connectionId: delivery.connectionId,
            destination: hook.destination,
            resource: delivery.resource,
            recordId: delivery.recordId,
            debounceMs: options.debounceMs,
            ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }),
          },
        ],
        signal: recordChangeSignal,
        signalArgs: [
          {
            deliveryId: delivery.deliveryId,
            action: delivery.action,
            occurredAt: delivery.occurredAt,
          },
        ],
      }),
    );
  };
}
