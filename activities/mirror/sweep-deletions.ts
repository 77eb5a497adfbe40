import { Context } from '@temporalio/activity';
import { heartbeatEvery } from '../heartbeats.js';
import type { Resource } from '../../destinations/record.js';
import type { MirrorCounts, MirrorSubject } from '../../workflows/mirror-types.js';
import { isRefusal, refusalsOf, type MirrorTarget, type PassTools } from './pass-tools.js';
import { readRecords, type ManyRead } from './records-by-id.js';
import { asError } from './source-pages.js';
import { writeDeletions, writeRecords } from './write-records.js';

/** The tables a subject fills: what a deletion sweep re-reads. */
export const SUBJECT_RESOURCES: Record<MirrorSubject, Resource[]> = {
  leads: ['leads', 'lead_bookings'],
  events: ['events', 'event_bookings'],
  appointments: ['appointments'],
};

/** Ids a read by id has an answer for: the record, or the service's 404. */
const answeredIds = (got: ManyRead): Set<string> =>
  new Set([...got.reads.map((r) => r.record.id), ...got.missing]);

/**
 * What a read by id of `ids` settled. `answered` is the ids in their order up to the first
 * without an answer: how far a cursor over them may move. Every answer counts all the same
 * (the records read, with what came included, and the ids the service answered 404), also
 * those past a failed read: written or marked now, they are not asked for again, so a flaky
 * service costs the failed requests and not the ones after them (`beyond`: records read past
 * `answered`). `failed` is the ids whose read failed. A refusal is thrown, and so is the
 * first failure when there is nothing to keep (no record read, and the cursor would not move):
 * the retry policy spaces the next try, rather than the caller asking again at once.
 */
export function settledReads(ids: readonly string[], got: ManyRead) {
  const refusal = got.failed.find((f) => isRefusal(f.error));
  if (refusal) throw asError(refusal.error);
  const has = answeredIds(got);
  const firstOpen = ids.findIndex((id) => !has.has(id));
  const answered = firstOpen === -1 ? [...ids] : ids.slice(0, firstOpen);
  if (answered.length === 0 && got.reads.length === 0) throw asError(got.failed[0]?.error);
  const settled = new Set(answered);
  return {
    answered,
    reads: got.reads,
    beyond: got.reads.filter((r) => !settled.has(r.record.id)).length,
    found: got.reads.flatMap((r) => [r.record, ...r.included]),
    gone: got.missing,
    failed: got.failed,
  };
}

/** The counts of a read by id and its write. */
export const byIdCounts = (
  requests: number,
  found: readonly unknown[],
  written: {
    written: number;
    unchanged: number;
    again: number;
    refused: number;
    passedOver: number;
    withoutEmail: number;
  },
): Partial<MirrorCounts> => ({
  requests,
  read: found.length,
  written: written.written,
  unchanged: written.unchanged,
  again: written.again,
  refused: written.refused,
  passedOver: written.passedOver,
  withoutEmail: written.withoutEmail,
});

export function createSweepDeletions({ deps, lanes, open, scopeOf }: PassTools) {
  /**
   * After a complete full pass: records the ledger has but the pass did not see are read by
   * id; a 404 marks them deleted, in the destination and the ledger. A few at a time.
   */
  async function sweepDeletions(
    input: MirrorTarget & {
      subjects: MirrorSubject[];
      generation: number;
      after: string | null;
    },
  ): Promise<{
    after: string | null;
    done: boolean;
    counts: Partial<MirrorCounts>;
    refusals?: string[];
  }> {
    const order = input.subjects.flatMap((s) => SUBJECT_RESOURCES[s]);
    const [startResource, startId] = (input.after ?? '').split('|') as [string, string?];
    let index = Math.max(0, order.indexOf(startResource as Resource));
    let afterId = input.after ? startId : undefined;
    const at = await open(input);
    const client = await deps.clientFor(input.connectionId, input.credentialsVersion);
    const beat = heartbeatEvery(Context.current());
    for (; index < order.length; index += 1, afterId = undefined) {
      const resource = order[index]!;
      const scope = scopeOf(at, resource);
      const unseen = await at.ledger.listUnseen(scope, input.generation, {
        limit: lanes * 8,
        ...(afterId ? { after: afterId } : {}),
      });
      if (unseen.length === 0) continue;
      const got = await readRecords(
        client,
        resource,
        unseen.map((e) => e.id),
        // Read at a slowed pace, a window of ids can take longer than the heartbeat timeout.
        { concurrency: lanes, keepGoing: true, onAnswer: beat },
      );
      beat();
      // The sweep moves on only past ids it has an answer for; the rest are asked again (those
      // read or marked deleted past a failed one are no longer unseen).
      const { answered, found, gone } = settledReads(
        unseen.map((e) => e.id),
        got,
      );
      const written = await writeRecords(at, input.generation, found);
      // The deletion mark is the time this activity was first scheduled, the same in every
      // attempt: a database counts the rows carrying it, so rows an attempt marked before it
      // failed (the ledger not yet told) count in the retry that finds them marked.
      const markedAt = new Date(Context.current().info.scheduledTimestampMs);
      const deletions = await writeDeletions(at, resource, gone, markedAt);
      const counts = byIdCounts(got.requests, found, written);
      return {
        after: `${resource}|${answered[answered.length - 1] ?? afterId ?? ''}`,
        done: false,
        counts: {
          ...counts,
          deleted: deletions.deleted,
          refused: (counts.refused ?? 0) + deletions.refused,
        },
        ...refusalsOf([...written.refusals, ...deletions.refusals]),
      };
    }
    return { after: null, done: true, counts: {} };
  }
  return sweepDeletions;
}
