import { Context } from '@temporalio/activity';
import type { AutomationStore } from '../../store/automation-endpoints.js';
import type { Inbox } from '../../store/inbox.js';
import {
  createAutomationActivities,
  DEFAULT_BREAKER,
  type OwedChanges,
} from '../automations/forward-change.js';
import type { Resource } from '../../records/canonical.js';

export interface RefreshInput {
  connectionId: string;
  destination: string;
  resource: Resource;
  recordId: string;
}

/**
 * The answer the per-record workflow of an earlier version expects. `record` and `forward`
 * are never set any more: the drain applies the change and forwards it to automations.
 */
export interface RefreshOutput {
  outcome: 'written' | 'unchanged' | 'deleted';
  record?: unknown;
  forward?: boolean;
}

/** What handing a per-record workflow's read over to the inbox needs. */
export interface HandOverDeps {
  inbox(): Promise<Inbox>;
  /** Wakes the connection's drain (a signal-with-start of `webhooks:<connection>`). */
  wakeDrain(connectionId: string, destination: string): Promise<void>;
}

/**
 * The activities of `recordWorkflow`, the one-workflow-per-record design that the inbox and
 * its drains replaced (DESIGN decision 3). Its workflows that were running when this version
 * started still call `refreshRecord`; it no longer reads the record, but puts the notice in
 * the connection's inbox and wakes the drain, which reads and writes it with every other
 * notice, and answers `unchanged`, so no record enters those workflows' history and they end
 * after their quiet spell (docs/webhooks.md, "Upgrading").
 */
export function createRecordActivities(
  deps: HandOverDeps,
  automations?: AutomationStore,
  kept?: OwedChanges,
) {
  return {
    ...createAutomationActivities(automations, DEFAULT_BREAKER, kept),
    async refreshRecord(input: RefreshInput): Promise<RefreshOutput> {
      const info = Context.current().info;
      const inbox = await deps.inbox();
      // One notice per read the workflow asked for; a retry of that read is the same notice.
      await inbox.accept({
        connectionId: input.connectionId,
        deliveryId: `record-workflow:${info.workflowExecution?.runId ?? ''}:${info.activityId}`,
        resource: input.resource,
        recordId: input.recordId,
        action: 'updated',
        occurredAt: null,
      });
      await deps.wakeDrain(input.connectionId, input.destination);
      return { outcome: 'unchanged' };
    },
  };
}
