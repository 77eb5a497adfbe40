import type {
  DestinationDescription,
  RecordRefusal,
  RefusalReason,
  UpsertResult,
} from './destination.js';
import { DestinationRecordError, DestinationTargetError } from './errors.js';
import { crmDestinationId } from './destination-targets.js';
import type { JsonValue, MirrorRecord, Resource } from './record.js';
import { TABLES } from './tables.js';

/** What the CRM destinations share about records and field maps. */

const EMAIL = /^[^\s@,;]+@[^\s@,;]+\.[^\s@,;]+$/;

/** The addresses in a text of one or more e-mails, lower-cased; anything else is dropped. */
export function emailsIn(text: JsonValue | undefined): string[] {
  if (typeof text !== 'string') return [];
  return text
    .split(/[\s,;]+/)
    .map((e) => e.trim().toLowerCase())
    .filter((e) => EMAIL.test(e));
}

/**
 * The key of an event in a stage (or deal status) map: `canceled` or `completed` when the
 * event's boolean of that name is true (the service has no such status values: a canceled
 * event keeps `confirmed` or its proposal status), else its `status`.
 */
export function eventStageKey(attributes: MirrorRecord['attributes']): string {
  if (attributes.canceled === true) return 'canceled';
  if (attributes.completed === true) return 'completed';
  return typeof attributes.status === 'string' ? attributes.status : '';
}

/** The list cut into parts of at most `size` (a vendor's batch limit). */
export const chunks = <T>(list: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(list.length / size) }, (_, i) =>
    list.slice(i * size, i * size + size),
  );

/** Where in a CRM mapping a field map is: `leads.contact`, `events.deal`… */
export type FieldMapPlace = `${'leads' | 'events'}.${string}`;

/**
 * Where a CRM mapping was given: its environment variable, or its key in the config file
 * (`file` set), so a refusal names what the user wrote, as loadConfig names a setting.
 */
export interface MappingSource {
  env: string;
  path: string;
  file?: string | undefined;
}

/** Where a CRM's mapping was given: its variable, or the config file `file`. */
export const mappingSource = (
  crm: 'hubspot' | 'pipedrive' | 'salesforce',
  file?: string,
): MappingSource => ({
  env: `EBSYNC_${crm.toUpperCase()}_MAPPING`,
  path: `crm.${crm}.mapping`,
  file,
});

/** The mapping setting as refusals name it: its variable, or its key in the config file. */
export function mappingSetting(source: MappingSource): string {
  return source.file === undefined ? source.env : `${source.path} in ${source.file}`;
}

/** One entry of a mapping as refusals name it (`leads.contact.firstname`) by its source. */
export function mappingEntry(source: MappingSource, entry: string): string {
  return source.file === undefined
    ? `${source.env} ${entry}`
    : `${source.path}.${entry} in ${source.file}`;
}

/**
 * A field map (CRM field → column of the mirrored table) from the defaults and the configured
 * overrides, null removing a field; a field or column that may not be mapped is refused in
 * one line naming the setting (as `source` says where it was given) and the place.
 */
export type FieldMapMerger = (
  source: MappingSource,
  where: FieldMapPlace,
  defaults: Record<string, string>,
  overrides: Record<string, string | null> | undefined,
) => Record<string, string>;

/**
 * One CRM's field-map merger: `refuse` says why a field may not be mapped at a place
 * (undefined when it may). A column the place's table lacks is refused too.
 */
export function fieldMapMerger(
  refuse: (field: string, where: FieldMapPlace) => string | undefined,
): FieldMapMerger {
  return (source, where, defaults, overrides) => {
    const table = where.startsWith('leads.') ? 'leads' : 'events';
    const merged: Record<string, string> = { ...defaults };
    const columns = new Set(TABLES[table].columns.map((c) => c.name));
    for (const [field, column] of Object.entries(overrides ?? {})) {
      const entry = mappingEntry(source, `${where}.${field}`);
      const why = refuse(field, where);
      if (why !== undefined) {
        throw new DestinationTargetError(`${entry} is not allowed: ${why}`);
      }
      if (column === null) {
        delete merged[field];
        continue;
      }
      if (!columns.has(column)) {
        throw new DestinationTargetError(
          `${entry}='${column}' is not allowed: expected a column of ${table} (docs/mirror.md, Tables)`,
        );
      }
      merged[field] = column;
    }
    return merged;
  };
}

/** What a CRM mapping's settings may override: every value, and within groups every entry. */
export type MappingOverrides<M> = {
  readonly [K in keyof M]?:
    | (M[K] extends string | number | boolean ? M[K] : { readonly [J in keyof M[K]]?: unknown })
    | undefined;
};

const isMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A CRM mapping from its defaults and the configured overrides, one way for every CRM: the
 * field maps `fieldMaps` names go through the CRM's merger (checked, null removing a field),
 * other maps inside a group (deal stages by event status) take the overridden keys over the
 * defaults, and single values take the override when one is set.
 */
export function mappingWithOverrides<M extends { leads: object; events: object }>(
  defaults: M,
  overrides: MappingOverrides<M>,
  merge: FieldMapMerger,
  fieldMaps: readonly FieldMapPlace[],
  source: MappingSource,
): M {
  const valueAt = (where: string, base: unknown, override: unknown): unknown => {
    if ((fieldMaps as readonly string[]).includes(where)) {
      return merge(
        source,
        where as FieldMapPlace,
        base as Record<string, string>,
        override as Record<string, string | null> | undefined,
      );
    }
    if (!isMap(base)) return override ?? base;
    const given = isMap(override) ? override : {};
    // Inside a group (leads, events) a map is replaced key by key; a group is walked.
    if (where.includes('.')) return { ...base, ...given };
    return entriesOf(base, given, where);
  };
  const entriesOf = (base: Record<string, unknown>, given: Record<string, unknown>, at: string) =>
    Object.fromEntries(
      [...new Set([...Object.keys(base), ...Object.keys(given)])].map((key) => [
        key,
        valueAt(at ? `${at}.${key}` : key, base[key], given[key]),
      ]),
    );
  return entriesOf(defaults, overrides, '') as M;
}

/** A field-map refusal: these fields are ebsync's own. */
export const reservedFields =
  (reserved: ReadonlySet<string>) =>
  (field: string): string | undefined =>
    reserved.has(field) ? `ebsync sets ${[...reserved].join(', ')} itself` : undefined;

/** A CRM destination's name in ledger keys and for people: the vendor's host, no credentials. */
export function crmDescription(
  kind: 'hubspot' | 'pipedrive' | 'salesforce',
  vendor: string,
  url: string,
): DestinationDescription {
  return { kind, id: crmDestinationId(kind, url), label: `${vendor} at ${new URL(url).host}` };
}

/**
 * The batch a CRM destination takes: the leads or events it writes, or undefined for the
 * other resources (bookings, appointments), which no CRM object holds and are passed over.
 */
export function crmBatch(
  vendor: string,
  max: number,
  resource: Resource,
  records: readonly MirrorRecord[],
): 'leads' | 'events' | undefined {
  if (records.length > max) {
    throw new DestinationRecordError(`at most ${max} records per ${vendor} batch`);
  }
  return resource === 'leads' || resource === 'events' ? resource : undefined;
}

/** What a batch of passed-over records comes to: nothing written, each keyed by its id. */
export const passedOver = (records: readonly MirrorRecord[]): UpsertResult => ({
  inserted: 0,
  updated: 0,
  unchanged: 0,
  passedOver: records.length,
  keys: records.map((r) => r.id),
});

/** How long a vendor's reason may be in the mirror's refusal lines. */
const REASON_CHARS = 200;

/** A vendor's reason as the mirror's refusal lines carry it: its code, its text cut short. */
export const shortReason = (reason: RefusalReason): RefusalReason => ({
  code: reason.code,
  message: reason.message.slice(0, REASON_CHARS),
});

/**
 * The refusals of one upsert, by index in the batch given: records refused whole (`refused`,
 * by record id), and records written without a part the CRM refused (`partial`: a contact).
 */
export function refusalsOf(
  records: readonly MirrorRecord[],
  refused: ReadonlyMap<string, RefusalReason>,
  partial: ReadonlyMap<string, RefusalReason>,
): RecordRefusal[] {
  const out: RecordRefusal[] = [];
  records.forEach((record, index) => {
    const whole = refused.get(record.id);
    const part = whole ? undefined : partial.get(record.id);
    const reason = whole ?? part;
    if (!reason) return;
    out.push({
      index,
      ...shortReason(reason),
      ...(part ? { partial: true } : {}),
    });
  });
  return out;
}
