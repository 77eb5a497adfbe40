import type { Destination, SchemaChanges, UpsertResult } from '../../destinations/destination.js';
import { DestinationPausedError } from '../../destinations/errors.js';
import type { JsonObject, JsonValue, MirrorRecord, Resource } from '../../destinations/record.js';
import { TABLES, type ColumnSpec, type TableSpec } from '../../destinations/tables.js';
import { REFUSED_HASH, type Ledger, type LedgerScope } from '../../store/ledger.js';
import { MAX_REFUSAL_LINES, NOT_DELETED, PARTLY_WRITTEN } from '../../workflows/mirror-types.js';
import { RESOURCES, type CanonicalRecord, type Scalar } from '../../records/canonical.js';
import { isUtcIso } from '../../records/instants.js';
import { objectTemplate } from '../../records/object-template.js';

/** Which ledger: one connection's records in one destination. */
export interface WriteTarget {
  connectionId: string;
  ledger: Ledger;
  destination: Destination;
}

export interface WriteCounts {
  written: number;
  /** Records the destination already held, from a pass before this one. */
  unchanged: number;
  /**
   * Records this pass had already read and written (or found up to date): overlapping queries
   * over a skewed list, a lead's bookings that came with it and again from the booking list.
   */
  again: number;
  /** Records the destination refused (not written; tried again next pass). */
  refused: number;
  /**
   * Records the destination has no place for (bookings and appointments, in a CRM): read, not
   * written. The ledger keeps their hashes, so a later pass counts them up to date.
   */
  passedOver: number;
  /** Records written with no email address to link a contact by (UpsertResult.withoutEmail). */
  withoutEmail: number;
  /** Why, one line per refused record: at most MAX_REFUSAL_LINES of them. */
  refusals: string[];
}

/**
 * The destination paused (DestinationPausedError) during writeRecords: `counts` says what the
 * call wrote before, all of it in the ledger (the records it found up to date in the table it
 * was writing are neither counted nor marked seen).
 */
export class WritePausedError extends DestinationPausedError {
  constructor(
    paused: DestinationPausedError,
    readonly counts: WriteCounts,
  ) {
    super(paused.message, paused.resumeAt);
  }
}

export const emptyWriteCounts = (): WriteCounts => ({
  written: 0,
  unchanged: 0,
  again: 0,
  refused: 0,
  passedOver: 0,
  withoutEmail: 0,
  refusals: [],
});

/**
 * The ledger hash of a record not written in full (refused, or written in part: a deal
 * without its contact): it matches no record's hash, so the next pass writes the record
 * again, and the record still counts as seen (never swept as deleted).
 */

function numberOf(value: Scalar): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) {
    return Number(value);
  }
  return null;
}

/** A canonical value in its column's type; null where the service sent something else. */
function columnValue(column: ColumnSpec, value: Scalar | undefined): JsonValue {
  if (value === undefined || value === null) return null;
  switch (column.type) {
    case 'integer':
    case 'cents': {
      const n = numberOf(value);
      return n !== null && Number.isInteger(n) ? n : null;
    }
    case 'number':
      return numberOf(value);
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'text':
      return typeof value === 'string' ? value : String(value);
    case 'timestamp':
      return typeof value === 'string' && (isUtcIso(value) || !Number.isNaN(Date.parse(value)))
        ? value
        : null;
    case 'date':
      return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)
        ? value.slice(0, 10)
        : null;
    case 'json':
      if (typeof value !== 'string') return value;
      try {
        return JSON.parse(value) as JsonValue;
      } catch {
        return value;
      }
  }
}

/** Each table's columns, null, in the table's order (see objectTemplate). */
const ROW_TEMPLATES = Object.fromEntries(
  RESOURCES.map((resource) => [
    resource,
    objectTemplate(TABLES[resource].columns.map((column) => column.name)),
  ]),
) as Readonly<Record<Resource, Record<string, null>>>;

/**
 * The destination's row of a canonical record: each column of tables.ts from its attribute
 * (or, for `x_id` columns the service gives only as a relationship, from that relationship).
 */
export function toMirrorRecord(record: CanonicalRecord): MirrorRecord {
  const resource = record.resource;
  // Every column is set below: a copy of the table's template keeps the row in V8's fast mode.
  const attributes: Record<string, JsonValue> = { ...ROW_TEMPLATES[resource] };
  for (const column of TABLES[resource].columns) {
    let value: Scalar | undefined = record.attributes[column.from ?? column.name];
    if (value === undefined && column.name.endsWith('_id')) {
      const related = record.relationships[column.name.slice(0, -3)];
      if (typeof related === 'string') value = related;
    }
    attributes[column.name] = columnValue(column, value);
  }
  const raw: JsonObject = {
    id: record.id,
    type: record.resource,
    attributes: record.attributes,
    relationships: record.relationships,
  };
  return { resource, id: record.id, attributes, raw };
}

/**
 * Ensures under way, per destination, connection and table (the ledger's scope): a batch
 * starting meanwhile waits for it.
 */
const ensuring = new WeakMap<Destination, Map<string, Promise<void>>>();

/**
 * A table made now (its file or table removed since it was written) holds none of the rows the
 * ledger's hashes describe: they are forgotten, so every record is written again. A batch
 * written beside it (Postgres takes two at once) joins the same ensure rather than asking on
 * its own: the destination would answer it "there already", and it would compare its records
 * with hashes about to be forgotten, skipping rows the new table lacks.
 */
function tableEnsured(target: WriteTarget, scope: LedgerScope, resource: Resource): Promise<void> {
  let tables = ensuring.get(target.destination);
  if (!tables) ensuring.set(target.destination, (tables = new Map<string, Promise<void>>()));
  const key = `${scope.connectionId}\n${resource}`;
  let ensured = tables.get(key);
  if (!ensured) {
    const under = tables;
    ensured = (async () => {
      if (await target.destination.ensureTable(resource)) await target.ledger.forgetHashes(scope);
    })().finally(() => under.delete(key));
    tables.set(key, ensured);
  }
  return ensured;
}

/**
 * The one write path of the mirror (passes and webhooks alike): records whose hash the
 * ledger already holds cost nothing but a "seen" mark; the rest are upserted in batches of the
 * destination's size, then recorded. The ledger is written after the destination, so a crash
 * between the two only means the next pass writes the same rows again (upserts: harmless).
 */
export async function writeRecords(
  target: WriteTarget,
  generation: number,
  records: readonly CanonicalRecord[],
): Promise<WriteCounts> {
  const byResource = new Map<Resource, Map<string, CanonicalRecord>>();
  for (const record of records) {
    const resource = record.resource;
    let group = byResource.get(resource);
    if (!group) byResource.set(resource, (group = new Map<string, CanonicalRecord>()));
    group.set(record.id, record);
  }
  const counts = emptyWriteCounts();
  const destination = target.destination.describe().id;
  const batchSize = Math.max(1, target.destination.capabilities.maxBatchSize);
  for (const [resource, group] of byResource) {
    const scope: LedgerScope = { connectionId: target.connectionId, destination, resource };
    await tableEnsured(target, scope, resource);
    const list = [...group.values()];
    const verdicts = await target.ledger.classify(
      scope,
      list.map((r) => ({ id: r.id, hash: r.hash })),
    );
    const changed = list.filter((_, i) => verdicts[i]?.state !== 'unchanged');
    const unchanged = list.filter((_, i) => verdicts[i]?.state === 'unchanged').map((r) => r.id);
    const again = verdicts.filter(
      (v) => v.state === 'unchanged' && v.seenGeneration === generation,
    ).length;
    // CRMs without upsert (Pipedrive) update by the key the ledger kept from the last write.
    const keys = new Map(verdicts.map((v) => [v.id, v.destinationKey]));
    const refusedThisPass = new Set(
      verdicts.filter((v) => v.refused && v.seenGeneration === generation).map((v) => v.id),
    );
    /** Records the destination's answer of `batch` in the ledger and in the counts. */
    const recordBatch = async (
      batch: readonly CanonicalRecord[],
      result: UpsertResult,
    ): Promise<void> => {
      const refused = new Map((result.refused ?? []).map((r) => [r.index, r]));
      await target.ledger.recordWritten(
        scope,
        generation,
        batch.map((r, j) => {
          const refusal = refused.get(j);
          const written = result.keys[j] ?? r.id;
          if (!refusal) return { id: r.id, hash: r.hash, destinationKey: written };
          // A record written in part keeps the key it was written under, for the next try.
          const key = refusal.partial ? written : (keys.get(r.id) ?? '');
          return { id: r.id, hash: REFUSED_HASH, destinationKey: key };
        }),
      );
      // A record this pass had sent already, and the destination refused, is sent again (a
      // slice read again after a kill or a failed write, an overlap of queries), but counted
      // once: read again. The refusal line is said again, should the first be lost with its
      // attempt.
      const sentBefore = batch.filter((r) => refusedThisPass.has(r.id)).length;
      let notWritten = 0;
      for (const [j, refusal] of refused) {
        if (!refusal.partial && !refusedThisPass.has(batch[j]?.id ?? '')) notWritten += 1;
        if (counts.refusals.length < MAX_REFUSAL_LINES) {
          const what = refusal.partial ? PARTLY_WRITTEN : 'refused';
          counts.refusals.push(
            `${resource} ${batch[j]?.id ?? `#${j}`} ${what}: ${refusal.code}: ${refusal.message}`,
          );
        }
      }
      const passedOver = result.passedOver ?? 0;
      counts.written += batch.length - notWritten - passedOver - sentBefore;
      counts.refused += notWritten;
      counts.again += sentBefore;
      counts.passedOver += passedOver;
      counts.withoutEmail += result.withoutEmail ?? 0;
    };
    for (let i = 0; i < changed.length; i += batchSize) {
      const batch = changed.slice(i, i + batchSize);
      let result: UpsertResult;
      try {
        result = await target.destination.upsert(
          resource,
          batch.map((r) => {
            const known = keys.get(r.id);
            return known ? { ...toMirrorRecord(r), destinationKey: known } : toMirrorRecord(r);
          }),
        );
      } catch (error) {
        if (!(error instanceof DestinationPausedError)) throw error;
        // What the destination wrote before it paused is recorded and counted as any batch.
        const part = error.partial;
        if (part) {
          const taken = new Set(part.indexes);
          await recordBatch(
            batch.filter((_, j) => taken.has(j)),
            part.result,
          );
        }
        throw new WritePausedError(error, counts);
      }
      await recordBatch(batch, result);
    }
    if (unchanged.length > 0) await target.ledger.markSeen(scope, generation, unchanged);
    counts.unchanged += unchanged.length - again;
    counts.again += again;
  }
  // A record that came twice in one batch (queries cut over a skewed list overlap) is written
  // once, its later copy; the other copy counts as read again, as it would in the next batch,
  // so that every record read is counted written, up to date, read again or refused.
  let distinct = 0;
  for (const group of byResource.values()) distinct += group.size;
  counts.again += records.length - distinct;
  return counts;
}

/**
 * After ensureSchema: the ledger forgets the hashes of each table it made or gave a column (as
 * writeRecords does for one table), so that a pass into a removed file or table, or a column
 * dropped by hand or new in this version, writes every record again instead of counting it up
 * to date: none of the rows holds what the hashes describe.
 */
export async function forgetChangedTables(
  target: WriteTarget,
  changes: SchemaChanges,
  tables: readonly TableSpec[],
): Promise<void> {
  const destination = target.destination.describe().id;
  for (const table of tables) {
    const changed =
      changes.createdTables.includes(table.table) ||
      changes.addedColumns.some((column) => column.startsWith(`${table.table}.`));
    if (!changed) continue;
    await target.ledger.forgetHashes({
      connectionId: target.connectionId,
      destination,
      resource: table.resource,
    });
  }
}

/** What writeDeletions did. */
export interface DeletionCounts {
  /** Records the destination marked deleted: what a pass counts as "marked deleted". */
  deleted: number;
  /** Records the destination refused to delete (still live there; tried again next pass). */
  refused: number;
  /** Why, one line per refused record: at most MAX_REFUSAL_LINES of them. */
  refusals: string[];
  /** The ids of the records refused, all of them. */
  refusedIds: string[];
}

/**
 * Records the service answered 404 for: marked deleted in the destination, then the ledger,
 * both at `at`. `deleted` is how many the destination marked (a database: the rows marked
 * `at`, also by an earlier call with the same `at`): a CRM marks none of a resource it has no
 * place for (bookings) nor where the mapping keeps deleted records (`onDelete: "keep"`), and
 * a database none whose row it never held. A record the CRM refused to delete is counted
 * refused, with its reason, and stays live in the ledger: the next full pass's sweep reads it
 * again and tries the deletion again, as the next pass writes a refused record again.
 */
export async function writeDeletions(
  target: WriteTarget,
  resource: Resource,
  ids: readonly string[],
  at = new Date(),
): Promise<DeletionCounts> {
  if (ids.length === 0) return { deleted: 0, refused: 0, refusals: [], refusedIds: [] };
  const result = await target.destination.markDeleted(resource, ids, at);
  const refused = result.refused ?? [];
  const stillLive = new Set(refused.map((r) => r.id));
  await target.ledger.markDeleted(
    { connectionId: target.connectionId, destination: target.destination.describe().id, resource },
    stillLive.size > 0 ? ids.filter((id) => !stillLive.has(id)) : ids,
    at,
  );
  return {
    deleted: result.marked,
    refused: refused.length,
    refusals: refused
      .slice(0, MAX_REFUSAL_LINES)
      .map((r) => `${resource} ${r.id} ${NOT_DELETED}: ${r.code}: ${r.message}`),
    refusedIds: [...stillLive],
  };
}
