import { Context, log } from '@temporalio/activity';
import { ApplicationFailure, type PayloadCodec } from '@temporalio/common';
import { AuthenticationError, PermissionError, TlsTrustError } from '../../api/errors.js';
import { sendsTo, type AutomationStore } from '../../store/automation-endpoints.js';
import type { Inbox, OwedChange, PendingNotice } from '../../store/inbox.js';
import { FORWARDED_DELETED, type Ledger, type LedgerScope } from '../../store/ledger.js';
import { sealValue } from '../../store/sealed-values.js';
import { endpointWants } from '../automations/forward-change.js';
import { addDrainCounts, emptyDrainTotals } from '../../workflows/drain-types.js';
import { keepRefusals } from '../../workflows/mirror-types.js';
import { withServiceFailures } from '../failures.js';
import { heartbeatEvery } from '../heartbeats.js';
import type { Client as ServiceClient } from '../../api/client.js';
import type { CanonicalRecord, Resource } from '../../records/canonical.js';
import type { MirrorDeps } from './pass.js';
import { pause } from '../pause.js';
import { readEach, type RecordTarget } from './records-by-id.js';
import {
  WritePausedError,
  writeDeletions,
  writeRecords,
  type WriteTarget,
} from './write-records.js';
import { claimSoleWriter } from './sole-writer.js';

/** What a drain's batch activity needs beside the mirror's own dependencies. */
export interface DrainDeps extends MirrorDeps {
  /** The process's webhook inbox (the store's, opened once). */
  inbox(): Promise<Inbox>;
  /** Notices one batch takes at most (EBSYNC_WEBHOOK_BATCH). */
  batchSize: number;
  /** Applied notices are kept this long, deduping retried deliveries, then pruned. */
  dedupeWindowMs: number;
  /** How long one activity keeps draining on its own (DrainSession; defaults: SESSION). */
  session?: Partial<DrainSession>;
}

/**
 * One drain activity takes batch after batch while notices keep coming, looking at the inbox
 * itself between them, and promises the receivers so in the store (Inbox.watch): they send no
 * wake-ups meanwhile. A batch then costs Temporal nothing; at 50 deliveries a second the
 * wake-up, workflow task and activity task of every batch were about 30 ms of Temporal's CPU
 * and as much of the worker's.
 */
export interface DrainSession {
  /**
   * The activity returns after this long at most (it holds a worker slot meanwhile;
   * EBSYNC_WEBHOOK_SESSION). 0: after one batch (or a run of full ones), no promise made.
   */
  maxMs: number;
  /** ... or once the inbox has been empty this long. */
  quietMs: number;
  /**
   * A batch that was not full is followed by the next no sooner than this after it began.
   * Each batch has a fixed cost (claiming, a destination transaction, marking done, each with
   * its fsync, and the wake-ups of idle cores they bring): at 50 deliveries a second, 500 ms
   * instead of 250 ms cut the worker's CPU per delivery by about a quarter, and a notice still
   * waits well inside the second a change may take.
   */
  gapMs: number;
  /** An empty inbox is looked at again this often. */
  pollMs: number;
  /** The promise to the receivers runs this far ahead, renewed when half of it is left. */
  watchMs: number;
  /**
   * Sessions one worker holds at once. Past that, a drain activity takes one batch (or a run
   * of full ones) as without sessions, so a thousand connections streaming at once do not
   * hold every activity slot of the worker for the length of a session.
   */
  slots: number;
}

export const SESSION: DrainSession = {
  maxMs: 30_000,
  quietMs: 2_000,
  gapMs: 500,
  pollMs: 100,
  watchMs: 4_000,
  slots: 25,
};

/** Automation endpoints and the codec that seals the changes kept for them. */
export interface DrainAutomations {
  store: AutomationStore;
  codec: PayloadCodec;
}

export interface DrainBatchInput {
  connectionId: string;
  destination: string;
  /** Names this batch: the same on every retry, so the changes it keeps are found again. */
  batchKey: string;
  /**
   * Notices (by their inbox seq, never a record's data) the workflow holds back for now: the
   * service answered their records in a way that could not be read. Batches pass them by.
   */
  held?: readonly number[];
}

/** Counts only: no record leaves the activity (DESIGN decision 1). */
/** What a batch the destination paused wrote, as a batch's counts. */
function pausedCounts(error: WritePausedError): Partial<DrainBatchOutput> {
  const { written, refused, withoutEmail } = error.counts;
  return { written, refused, withoutEmail };
}

/**
 * The activity's failure on a destination's pause, with the counts of what it wrote before
 * (`passCounts`): the workflow adds them to its totals, since the activity returns none.
 */
function pausedFailure(error: WritePausedError, total: DrainBatchOutput): ApplicationFailure {
  const { written, refused, withoutEmail } = total;
  return ApplicationFailure.create({
    type: error.name,
    message: error.message,
    nonRetryable: true,
    details: [{ resumeAt: error.resumeAt, passCounts: { written, refused, withoutEmail } }],
  });
}

export interface DrainBatchOutput {
  /** Notices taken from the inbox and applied. */
  notices: number;
  /** Distinct records read for them (the latest notice per record counts). */
  records: number;
  written: number;
  unchanged: number;
  deleted: number;
  /** Records the destination refused (the next pass tries them again). */
  refused: number;
  /**
   * Records a CRM wrote with no email address to find a contact by, as a pass counts them
   * (UpsertResult.withoutEmail). A worker from before it was counted returns none, which
   * addDrainCounts takes as 0.
   */
  withoutEmail: number;
  /** Changes kept for automation endpoints under this batch's key. */
  owed: number;
  /** Notices whose read the service refused for good; they stay pending. */
  unreadable: number;
  /** Why, when some were unreadable: the first refusal, one line. */
  refusal: string | null;
  /**
   * Set when the refusal was the records' own (an answer that does not match the spec, a
   * 400): the seqs of their notices, left pending while the rest go on. Unset when it holds
   * for every read of the connection (a revoked grant, a missing permission): then nothing
   * can be read and the drain waits.
   */
  unreadableSeqs?: number[];
  /** Notices are waiting still: the next activity should follow at once. */
  more: boolean;
  /** Batches that took notices (one activity takes several while they keep coming). */
  batches?: number;
}

/** Nothing applied yet: the workflow's zero totals, and nothing owed, refused or waiting. */
const noOutput = (): DrainBatchOutput => ({
  ...emptyDrainTotals(),
  owed: 0,
  unreadable: 0,
  refusal: null,
  more: false,
});

/** A refusal that stops every read of the connection, not only that of one record. */
const refusesConnection = (error: unknown): boolean =>
  error instanceof AuthenticationError ||
  error instanceof PermissionError ||
  error instanceof TlsTrustError;

/** A record's notices in this batch: the latest one stands for all (one read). */
interface Dirty extends RecordTarget {
  seqs: number[];
}

function dirtyRecords(notices: readonly PendingNotice[]): Dirty[] {
  const byRecord = new Map<string, Dirty>();
  for (const notice of notices) {
    const key = `${notice.resource}/${notice.recordId}`;
    const known = byRecord.get(key);
    if (known) known.seqs.push(notice.seq);
    else
      byRecord.set(key, {
        resource: notice.resource as Resource,
        id: notice.recordId,
        seqs: [notice.seq],
      });
  }
  return [...byRecord.values()];
}

/**
 * The batch's records' other pending notices, past its oldest `batchSize`: looked up before the
 * records are read, so each was stored before its read and that read covers it. Without them,
 * a burst of notices about a few records (a record edited many times, a bulk edit) read each
 * record again in every batch, one batch of `batchSize` notices after another: 1,000 notices
 * about 50 leads took 500 reads and, at the service's 10 requests a second, 50 s instead of 5.
 * At most ten batches' worth are added; the rest are in later batches.
 */
async function addLaterNotices(
  inbox: Inbox,
  connectionId: string,
  dirty: readonly Dirty[],
  batchSize: number,
): Promise<void> {
  const byKey = new Map(dirty.map((d) => [`${d.resource}/${d.id}`, d]));
  const seen = new Set(dirty.flatMap((d) => d.seqs));
  const later = await inbox.pendingOf(
    connectionId,
    dirty.map((d) => ({ resource: d.resource, recordId: d.id })),
    10 * batchSize,
  );
  for (const notice of later) {
    if (!seen.has(notice.seq))
      byKey.get(`${notice.resource}/${notice.recordId}`)?.seqs.push(notice.seq);
  }
}

const scopeOf = (target: WriteTarget, resource: string): LedgerScope => ({
  connectionId: target.connectionId,
  destination: target.destination.describe().id,
  resource,
});

function byResource<T extends { resource: string }>(items: readonly T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(item.resource);
    if (group) group.push(item);
    else groups.set(item.resource, [item]);
  }
  return groups;
}

/** The records of `reads` whose hash the ledger does not hold yet: what a write changes. */
async function notInLedger(
  ledger: Ledger,
  target: WriteTarget,
  records: readonly CanonicalRecord[],
): Promise<Set<CanonicalRecord>> {
  const changed = new Set<CanonicalRecord>();
  for (const [resource, group] of byResource(records)) {
    const verdicts = await ledger.classify(
      scopeOf(target, resource),
      group.map((r) => ({ id: r.id, hash: r.hash })),
    );
    group.forEach((record, i) => {
      if (verdicts[i]?.state !== 'unchanged') changed.add(record);
    });
  }
  return changed;
}

/**
 * What endpoints are owed of the batch's records, judged by what they were last sent
 * (LedgerEntry.forwardedHash), not by whether this batch's write changes the destination: a
 * pass may have written the change already while its notice waited in the inbox, and the
 * endpoints have not had it. A record read live is owed when its hash is not the one last sent
 * (or the ledger has it deleted: it is back). A gone record is owed its deletion when the
 * ledger has it and no deletion was sent, unless a pass both wrote and deleted it with nothing
 * ever sent: no endpoint was told of it as written. One the ledger never had (made and deleted
 * between two reads, or never this business's) leaves no mark to tell a second notice of it
 * from the first: nothing is sent for it. One read of the ledger per resource, as a
 * classification costs.
 */
async function owedToEndpoints(
  ledger: Ledger,
  target: WriteTarget,
  records: readonly CanonicalRecord[],
  gone: readonly RecordTarget[],
): Promise<{ written: Set<CanonicalRecord>; deleted: RecordTarget[] }> {
  const written = new Set<CanonicalRecord>();
  const deleted: RecordTarget[] = [];
  const resources = new Set([...records, ...gone].map((r) => r.resource));
  for (const resource of resources) {
    const live = records.filter((r) => r.resource === resource);
    const dead = gone.filter((g) => g.resource === resource);
    const entries = new Map(
      (
        await ledger.get(scopeOf(target, resource), [
          ...live.map((r) => r.id),
          ...dead.map((g) => g.id),
        ])
      ).map((e) => [e.id, e]),
    );
    for (const record of live) {
      const entry = entries.get(record.id);
      if (!entry || entry.deletedAt !== null || entry.forwardedHash !== record.hash)
        written.add(record);
    }
    for (const g of dead) {
      const entry = entries.get(g.id);
      if (
        entry &&
        entry.forwardedHash !== FORWARDED_DELETED &&
        (entry.deletedAt === null || entry.forwardedHash !== null)
      )
        deleted.push(g);
    }
  }
  return { written, deleted };
}

/** Records that these were sent (or are being sent) to the endpoints: they are owed no more. */
async function markForwarded(
  ledger: Ledger,
  target: WriteTarget,
  sent: readonly { resource: string; id: string; hash: string }[],
): Promise<void> {
  for (const [resource, group] of byResource(sent)) {
    await ledger.markForwarded(
      scopeOf(target, resource),
      group.map((s) => ({ id: s.id, hash: s.hash })),
    );
  }
}

/**
 * The drain's batch (DESIGN decision 3): the oldest pending notices of a connection, the latest
 * per record, each record read again by id (paced as every request of the connection, several
 * at once) and written in one go through the mirror's write path; a 404 marks it deleted. The
 * notices are marked applied, and only counts go back to the workflow. Changes that automation
 * endpoints want are kept in the store, sealed, under the batch's key, before the write: a
 * retry after a crash between the write and the answer still finds them.
 */
export function createDrainActivities(deps: DrainDeps, automations?: DrainAutomations) {
  /** Keeps the changes endpoints want; returns the record targets kept. */
  const keepWanted = async (
    input: DrainBatchInput,
    changes: { target: RecordTarget; action: 'written' | 'deleted'; record: unknown }[],
  ): Promise<RecordTarget[]> => {
    if (!automations || changes.length === 0) return [];
    const endpoints = await automations.store.list();
    const wanted = changes.filter((c) =>
      endpoints.some((endpoint) =>
        endpointWants(endpoint, {
          connectionId: input.connectionId,
          resource: c.target.resource,
          action: c.action,
        }),
      ),
    );
    const appliedAt = new Date();
    const kept: OwedChange[] = await Promise.all(
      wanted.map(async (c) => ({
        connectionId: input.connectionId,
        batchKey: input.batchKey,
        resource: c.target.resource,
        recordId: c.target.id,
        action: c.action,
        sealed: await sealValue(automations.codec, c.record),
        appliedAt,
      })),
    );
    await (await deps.inbox()).keepChanges(kept);
    return wanted.map((c) => c.target);
  };

  /** Any endpoint at all could want a change of this connection: only then is it worked out. */
  const anyEndpointFor = async (connectionId: string): Promise<boolean> =>
    automations !== undefined &&
    (await automations.store.list()).some(
      (e) =>
        sendsTo(e) &&
        (e.filters.connections.length === 0 || e.filters.connections.includes(connectionId)),
    );

  const batch = async (
    input: DrainBatchInput,
    beat: () => void,
    clientOf: () => Promise<ServiceClient>,
  ): Promise<DrainBatchOutput> => {
    const inbox = await deps.inbox();
    const held = new Set(input.held ?? []);
    const notices = (await inbox.pending(input.connectionId, deps.batchSize + held.size))
      .filter((notice) => !held.has(notice.seq))
      .slice(0, deps.batchSize);
    const out = noOutput();
    out.more = notices.length >= deps.batchSize;
    if (notices.length === 0) return out;
    // Each batch prunes a little more than it can add, so the table keeps to the window.
    await inbox.prune(new Date(Date.now() - deps.dedupeWindowMs), 2 * deps.batchSize);
    const dirty = dirtyRecords(notices);
    await addLaterNotices(inbox, input.connectionId, dirty, deps.batchSize);
    const [client, ledger, destination] = await Promise.all([
      clientOf(),
      deps.ledger(),
      deps.destination(input.destination),
    ]);
    await claimSoleWriter(ledger, destination, input.connectionId);
    const target: WriteTarget = { connectionId: input.connectionId, ledger, destination };
    const got = await readEach(client, dirty, {
      concurrency: deps.pagesInFlight ?? 4,
      keepGoing: true,
      onAnswer: beat,
    });
    const reads = got.answered.flatMap((a) => (a.read ? [{ target: a.target, read: a.read }] : []));
    const gone = got.answered.flatMap((a) => (a.read ? [] : [a.target]));
    const main = reads.map((r) => r.read.record);

    const forwarding = await anyEndpointFor(input.connectionId);
    const { written: changed, deleted: goneLive } = forwarding
      ? await owedToEndpoints(ledger, target, main, gone)
      : { written: new Set<CanonicalRecord>(), deleted: [] };
    const kept = await keepWanted(input, [
      ...reads
        .filter((r) => changed.has(r.read.record))
        .map((r) => ({ target: r.target, action: 'written' as const, record: r.read.record })),
      ...goneLive.map((g) => ({ target: g, action: 'deleted' as const, record: null })),
    ]);

    const counts = await writeRecords(
      target,
      0,
      reads.flatMap(({ read }) => [read.record, ...read.included]),
    );
    let deleted = 0;
    /** Deletions the destination refused: `resource\nid`. */
    const notDeleted = new Set<string>();
    for (const [resource, group] of byResource(gone)) {
      const deletions = await writeDeletions(
        target,
        resource as Resource,
        group.map((g) => g.id),
      );
      deleted += deletions.deleted;
      counts.refused += deletions.refused;
      counts.refusals = keepRefusals(counts.refusals, deletions.refusals);
      const refusedIds = new Set(deletions.refusedIds);
      for (const g of group) if (refusedIds.has(g.id)) notDeleted.add(`${resource}\n${g.id}`);
    }
    if (counts.refusals.length > 0) {
      log.warn('the destination refused records; the next pass tries them again', {
        refusals: counts.refusals,
      });
    }
    // A change kept for endpoints that the destination then refused is not a change.
    const keptKeys = new Set(kept.map((k) => `${k.resource}\n${k.id}`));
    let keptWritten = reads.filter(
      (r) => changed.has(r.read.record) && keptKeys.has(`${r.target.resource}\n${r.target.id}`),
    );
    let keptDeleted = goneLive.filter((g) => keptKeys.has(`${g.resource}\n${g.id}`));
    if (kept.length > 0 && counts.refused > 0) {
      const stillChanged = await notInLedger(ledger, target, main);
      const refusedWrites = keptWritten.filter((r) => stillChanged.has(r.read.record));
      // A deletion the destination refused is not one either: the record is still there.
      const refusedDeletions = keptDeleted.filter((g) => notDeleted.has(`${g.resource}\n${g.id}`));
      keptWritten = keptWritten.filter((r) => !refusedWrites.includes(r));
      keptDeleted = keptDeleted.filter((g) => !refusedDeletions.includes(g));
      await inbox.dropChanges(input.connectionId, input.batchKey, [
        ...refusedWrites.map((r) => ({ resource: r.target.resource, recordId: r.target.id })),
        ...refusedDeletions.map((g) => ({ resource: g.resource, recordId: g.id })),
      ]);
    }
    // What is kept now is the endpoints' (the forwarding sends it from the store, however
    // often the batch or its forwarding is retried): later notices of the same state send
    // nothing. Before the notices are marked applied, so that a batch retried after a crash
    // here finds its changes still kept under its key and keeps nothing twice.
    await markForwarded(ledger, target, [
      ...keptWritten.map((r) => ({
        resource: r.target.resource,
        id: r.target.id,
        hash: r.read.record.hash,
      })),
      ...keptDeleted.map((g) => ({ resource: g.resource, id: g.id, hash: FORWARDED_DELETED })),
    ]);

    const applied = [...reads.map((r) => r.target), ...gone];
    await inbox.markDone(
      input.connectionId,
      applied.flatMap((d) => d.seqs),
    );
    out.notices = applied.reduce((n, d) => n + d.seqs.length, 0);
    out.records = applied.length;
    out.written = counts.written;
    // Drains write as generation 0, so a record an earlier drain wrote counts as read again:
    // to a drain, that is up to date all the same, as is a record the destination has no place
    // for (a booking, in a CRM): nothing is left to write for either.
    out.unchanged = counts.unchanged + counts.again + counts.passedOver;
    out.refused = counts.refused;
    out.withoutEmail = counts.withoutEmail;
    out.deleted = deleted;
    out.owed = forwarding
      ? (await inbox.owedChanges(input.connectionId, input.batchKey)).length
      : 0;

    const retryable = got.failed.find(
      (f) => (f.error as { retryable?: unknown }).retryable === true,
    );
    if (retryable) {
      // An outage or a rate limit with nothing applied: the activity fails, and Temporal
      // retries it on its policy (Retry-After included).
      if (out.notices === 0) throw retryable.error;
      // What was read is applied, its notices done: counted here, or a throw would lose them
      // from the drain's totals. The rest goes to the next batch at once, which meets the
      // outage again, with nothing applied, if it lasts.
      out.more = true;
      return out;
    }
    const refusal = got.failed.find((f) => refusesConnection(f.error)) ?? got.failed[0];
    if (refusal) {
      // These could not be read: they stay pending. A refusal of the connection (a revoked
      // grant, a permission taken away) stops every read, and the workflow waits before it
      // asks again; one of a record's own (its answer out of spec) holds back only its
      // notices, and the workflow tries them again later while the others go on.
      out.unreadable = got.failed.reduce((n, f) => n + f.target.seqs.length, 0);
      const error = refusal.error;
      if (!refusesConnection(error)) out.unreadableSeqs = got.failed.flatMap((f) => f.target.seqs);
      out.refusal =
        error instanceof AuthenticationError
          ? `${error.message}; the connection needs re-authorization`
          : error instanceof Error
            ? error.message.split('\n')[0]!
            : String(error);
    }
    return out;
  };

  const session = { ...SESSION, ...deps.session };
  let sessions = 0;

  return {
    /**
     * Batches (above) one after another while notices keep coming; see DrainSession. Returns
     * after a batch that kept changes for automation endpoints (the workflow forwards them by
     * the batch key, which every batch of one activity shares) or that the service refused,
     * when the inbox stayed empty a while, after DrainSession.maxMs, or when cancelled (the
     * worker shutting down). The promise to the receivers ends before the last look at the
     * inbox, so a notice stored meanwhile is either seen there or woken for.
     */
    drainInbox: withServiceFailures(async (input: DrainBatchInput): Promise<DrainBatchOutput> => {
      const inbox = await deps.inbox();
      const context = Context.current();
      const cancelled = context.cancellationSignal;
      const beat = heartbeatEvery(context);
      // The connection's client, asked for once per activity: asking checks the connection
      // with a status query (at most once a second), and one query a second was about 14 ms of
      // the worker's and Temporal's CPU, a quarter of a millisecond per delivery at 50 a
      // second. Within a session the client's own calls still see a pause or a reconnect
      // (activities/service-client.ts); a reconnect fails the batch, which ends the session,
      // and the next activity asks again.
      let client: Promise<ServiceClient> | undefined;
      const clientOf = (): Promise<ServiceClient> => {
        if (client) return client;
        const made = deps.clientFor(input.connectionId);
        // A client that could not be made is asked for again by the next batch.
        made.catch(() => {
          if (client === made) client = undefined;
        });
        return (client = made);
      };
      const started = Date.now();
      let lastSeen = started;
      let watchedUntil = 0;
      const total = noOutput();
      const own = session.maxMs > 0 && sessions < session.slots;
      const maxMs = own ? session.maxMs : 0;
      if (own) sessions += 1;
      try {
        for (let n = 0; ; n++) {
          const batchStart = Date.now();
          if (own && watchedUntil - batchStart < session.watchMs / 2) {
            await inbox.watch(input.connectionId, input.destination, session.watchMs);
            watchedUntil = batchStart + session.watchMs;
          }
          let out: DrainBatchOutput;
          try {
            out = await batch(input, beat, clientOf);
          } catch (error) {
            // A destination's pause: what it wrote of the batch is in the ledger (the batch run
            // again after the reset finds it up to date) and counted here, once.
            const paused = error instanceof WritePausedError ? pausedCounts(error) : undefined;
            if (paused) addDrainCounts(total, paused);
            // What earlier batches applied is counted: this activity returns it, and the next
            // one, started at once, meets the failure again and retries on Temporal's policy.
            // Unless the failed batch kept changes for endpoints under this activity's key:
            // then it is retried as it is, so that a retry replaces them and none goes twice.
            const kept = await inbox.owedChanges(input.connectionId, input.batchKey).then(
              (owed) => owed.length > 0,
              () => true,
            );
            if (total.notices === 0 || kept) {
              if (error instanceof WritePausedError) throw pausedFailure(error, total);
              throw error;
            }
            break;
          }
          beat();
          addDrainCounts(total, out);
          total.owed = out.owed;
          total.unreadable = out.unreadable;
          total.refusal = out.refusal;
          if (out.unreadableSeqs) total.unreadableSeqs = out.unreadableSeqs;
          if (out.notices > 0) {
            total.batches! += 1;
            lastSeen = Date.now();
          }
          const now = Date.now();
          if (
            out.owed > 0 ||
            out.refusal !== null ||
            cancelled.aborted ||
            (n === 0 && out.notices === 0) ||
            now - started >= maxMs ||
            (!out.more && now - lastSeen >= session.quietMs)
          ) {
            break;
          }
          if (out.more) continue;
          const wait = Math.max(session.pollMs, batchStart + session.gapMs - now);
          await pause(wait, { signal: cancelled });
        }
      } finally {
        if (own) sessions -= 1;
        if (watchedUntil > 0) await inbox.watch(input.connectionId, input.destination, 0);
      }
      // Looked at after the promise ended: a notice stored before is found here, and one
      // stored after it is woken for by its receiver.
      // Notices held back (by the workflow or by this batch) are not waiting for a batch.
      const still = new Set([...(input.held ?? []), ...(total.unreadableSeqs ?? [])]);
      total.more = (await inbox.pending(input.connectionId, still.size + 1)).some(
        (notice) => !still.has(notice.seq),
      );
      return total;
    }),
  };
}
