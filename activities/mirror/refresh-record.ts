import { Context, log } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { CLIENT_NOT_AT_HAND } from '../../workflows/record-types.js';
import type { AutomationStore } from '../../store/automation-endpoints.js';
import { createAutomationActivities, endpointWants } from '../automations/forward-change.js';
import { withServiceFailures } from '../failures.js';
import type { CanonicalRecord, Resource } from './canonical.js';
import type { MirrorDeps } from './pass.js';
import { readRecord } from './records-by-id.js';
import { writeDeletions, writeRecords } from './write-records.js';

export interface RefreshInput {
  connectionId: string;
  destination: string;
  resource: Resource;
  recordId: string;
}

export interface RefreshOutput {
  /** written: the destination row changed; unchanged: the ledger already had this state. */
  outcome: 'written' | 'unchanged' | 'deleted';
  /** The record as written (canonical form), for automations; absent when unchanged or deleted. */
  record?: CanonicalRecord;
  /** Some automation endpoint wants this change: only then does the workflow forward it. */
  forward?: boolean;
}

/**
 * Fetch on notify (DESIGN decision 3): a webhook only says that a record changed, so the
 * record is read again by id and written through the mirror's own write path (the same
 * normalize, hash, ledger and destination code as a pass); a 404 means it is gone.
 * Generation 0: a webhook write belongs to no pass, and the ledger keeps the highest it saw.
 */
export function createRecordActivities(deps: MirrorDeps, automations?: AutomationStore) {
  // Asked here so that a change no endpoint wants costs no second activity.
  const wanted = async (input: RefreshInput, action: 'written' | 'deleted'): Promise<boolean> =>
    automations !== undefined &&
    (await automations.list()).some((endpoint) => endpointWants(endpoint, { ...input, action }));
  // A local activity does not wait for the connection workflow (see MirrorDeps.clientIfReady):
  // it hands the read to an ordinary activity, which may wait, its slot free meanwhile.
  const clientOf = (connectionId: string) => {
    if (!deps.clientIfReady || !Context.current().info.isLocal) return deps.clientFor(connectionId);
    const client = deps.clientIfReady(connectionId);
    if (client) return client;
    throw ApplicationFailure.create({
      type: CLIENT_NOT_AT_HAND,
      message: `this worker has no checked credentials of connection ${connectionId} at hand; the read goes to an ordinary activity`,
      nonRetryable: true,
      // Expected after a start and every few seconds: not a warning in the worker's log.
      category: ApplicationFailureCategory.BENIGN,
    });
  };
  return {
    // Without a store (tests of the write path alone) forwarding has nowhere to go: a no-op.
    ...createAutomationActivities(automations),
    refreshRecord: withServiceFailures(async (input: RefreshInput): Promise<RefreshOutput> => {
      const [client, ledger, destination] = await Promise.all([
        clientOf(input.connectionId),
        deps.ledger(),
        deps.destination(input.destination),
      ]);
      const target = { connectionId: input.connectionId, ledger, destination };
      const read = await readRecord(client, input.resource, input.recordId);
      if (!read) {
        await writeDeletions(target, input.resource, [input.recordId]);
        return { outcome: 'deleted', forward: await wanted(input, 'deleted') };
      }
      const counts = await writeRecords(target, 0, [read.record, ...read.included]);
      if (counts.refusals.length > 0) {
        log.warn('the destination refused the record; the next pass tries it again', {
          refusals: counts.refusals,
        });
      }
      return counts.written > 0
        ? { outcome: 'written', record: read.record, forward: await wanted(input, 'written') }
        : { outcome: 'unchanged' };
    }),
  };
}
