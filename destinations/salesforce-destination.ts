import { z } from 'zod';
import type { SalesforceMappingOverrides } from '../config/salesforce-mapping.js';
import type {
  DeletionRefusal,
  DeletionResult,
  Destination,
  DestinationCapabilities,
  DestinationDescription,
  RefusalReason,
  SchemaChanges,
  UpsertResult,
} from './destination.js';
import {
  chunks,
  crmBatch,
  crmDescription,
  emailsIn,
  eventStageKey,
  mappingSetting,
  mappingSource,
  passedOver,
  refusalsOf,
  shortReason,
} from './crm-fields.js';
import { UpsertPause } from './crm-pause.js';
import {
  DestinationRecordError,
  DestinationSchemaError,
  DestinationUnavailableError,
} from './errors.js';
import type { JsonValue, MirrorRecord, Resource } from './record.js';
import {
  SalesforceClient,
  errorCodeOf,
  type SalesforceClientOptions,
  type SalesforceErrorItem,
} from './salesforce-client.js';
import {
  SALESFORCE_KEYS,
  salesforceMapping,
  type SalesforceMapping,
} from './salesforce-mapping.js';
import {
  describeObjects,
  missingFields,
  unsuitedMapping,
  type FieldShape,
  type ObjectFields,
} from './salesforce-setup.js';
import { TABLES, type TableSpec } from './tables.js';

export interface SalesforceDestinationOptions extends SalesforceClientOptions {
  mapping?: SalesforceMappingOverrides;
  /** The config file the mapping came from, which its refusals name (else its variable). */
  mappingFile?: string;
}

// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections_upsert.htm
// — up to 200 records per sObject Collections request.
const BATCH = 200;
// https://help.salesforce.com/s/articleView?id=sf.leads_fields.htm — what web-to-lead writes
// where a required Lead field was left empty.
const NOT_PROVIDED = '[not provided]';

/**
 * No value as Salesforce takes a required field's: it refuses text of spaces alone
 * (REQUIRED_FIELD_MISSING) as it does an empty one, on every pass, so both get the fallback.
 */
function blank(value: unknown): boolean {
  return (
    value === null || value === undefined || (typeof value === 'string' && value.trim() === '')
  );
}

interface ItemResult {
  id?: string;
  success?: boolean;
  created?: boolean;
  errors?: SalesforceErrorItem[];
}

// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections_delete.htm
// — a DeleteResult per id asked: `id` (absent in some failures), `success`, `errors`.
const deleteResults = z.array(
  z.looseObject({
    id: z
      .string()
      .nullish()
      .transform((id) => id ?? undefined),
    success: z.boolean(),
    errors: z
      .array(
        z.looseObject({
          statusCode: z.string().optional(),
          errorCode: z.string().optional(),
          message: z.string().optional(),
        }),
      )
      .default([]),
  }),
);

/**
 * Item errors of a delete that mean the record is gone already: in the Recycle Bin
 * (ENTITY_IS_DELETED), or deleted for good since it was read (INVALID_CROSS_REFERENCE_KEY).
 */
const ALREADY_GONE = new Set(['ENTITY_IS_DELETED', 'INVALID_CROSS_REFERENCE_KEY']);

/**
 * A column's value as the Salesforce field takes it: numbers for number fields (money from
 * cents), `YYYY-MM-DD` for dates, text cut to the field's length (Salesforce refuses longer
 * text, STRING_TOO_LONG) for the rest; null clears the field.
 */
function fieldValue(
  table: 'leads' | 'events',
  column: string,
  field: FieldShape | undefined,
  value: JsonValue | undefined,
): JsonValue {
  const fieldType = field?.type;
  if (value === undefined || value === null) return null;
  const columnType = TABLES[table].columns.find((c) => c.name === column)?.type;
  const numeric = typeof value === 'number' && columnType === 'cents' ? value / 100 : value;
  switch (fieldType) {
    case 'currency':
    case 'double':
    case 'int':
    case 'percent':
      if (typeof numeric === 'number') return numeric;
      return typeof numeric === 'string' &&
        numeric.trim() !== '' &&
        Number.isFinite(Number(numeric))
        ? Number(numeric)
        : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'date':
      return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)
        ? value.slice(0, 10)
        : null;
    default: {
      const text = typeof numeric === 'object' ? JSON.stringify(numeric) : String(numeric);
      return field && field.length > 0 ? text.slice(0, field.length) : text;
    }
  }
}

type ItemFailure = { id: string; errors: SalesforceErrorItem[] };

/** What the mirror records of a record Salesforce refused: its first error's code and text. */
function reasonOf(failure: ItemFailure): RefusalReason {
  const [first] = failure.errors;
  return { code: errorCodeOf(first) ?? 'ERROR', message: first?.message ?? 'no reason given' };
}

/** A record a pause left unwritten (a Contact) or unlinked (a role), as Salesforce's refusals are. */
function pausedFailure(id: string, pause: UpsertPause): ItemFailure {
  const reason = pause.leftOut(LEFT_OUT);
  return { id, errors: [{ errorCode: reason.code, message: reason.message }] };
}

const reasonsOf = (failures: ReadonlyMap<string, ItemFailure>): Map<string, RefusalReason> =>
  new Map([...failures].map(([id, failure]) => [id, reasonOf(failure)]));

/** The records of one upsert that Salesforce took, refused, or took without their links. */
interface UpsertOutcome {
  ok: Map<string, ItemResult>;
  /** By record id: not written. */
  failed: Map<string, ItemFailure>;
  /** By record id: written, but a Contact or role of it was refused. */
  partial: Map<string, ItemFailure>;
  /**
   * By record id: records sent with no email address (a Lead without Email, a new
   * Opportunity without a customer Contact); counted for those written (withoutEmail).
   */
  noEmail: Set<string>;
}

/** What an upsert of `records` came to, as the mirror reads it (UpsertResult). */
function upsertResult(records: readonly MirrorRecord[], outcome: UpsertOutcome): UpsertResult {
  const ids = new Set(records.map((r) => r.id));
  const results = new Map([...outcome.ok].filter(([id]) => ids.has(id)));
  let inserted = 0;
  for (const r of results.values()) if (r.created) inserted += 1;
  // Item errors (allOrNone false) are the records' own, e.g. DUPLICATES_DETECTED: reported
  // to the mirror, which tries them again next pass, never retried here.
  const refused = refusalsOf(records, reasonsOf(outcome.failed), reasonsOf(outcome.partial));
  const withoutEmail = [...outcome.noEmail].filter((id) => results.has(id)).length;
  return {
    inserted,
    updated: results.size - inserted,
    unchanged: 0,
    keys: records.map((r) => results.get(r.id)?.id ?? r.id),
    ...(refused.length > 0 ? { refused } : {}),
    ...(withoutEmail > 0 ? { withoutEmail } : {}),
  };
}

/** The Contacts an Opportunity is linked to already, as its contact roles say. */
interface LinkedContacts {
  /** Their emails, lower case. */
  emails: Set<string>;
  /** Whether one of the roles is the primary one. */
  primary: boolean;
}

// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_query.htm
// — a page of query results: `done`, `nextRecordsUrl` while not, and the records with the
// fields asked; a parent's fields as an object, null when the lookup is empty.
const queryPage = z.looseObject({
  done: z.boolean(),
  nextRecordsUrl: z
    .string()
    .regex(/^\/services\/data\/v[\d.]+\/query\/[\w-]+$/)
    .optional(),
  records: z.array(
    z.looseObject({
      OpportunityId: z.string(),
      IsPrimary: z.boolean().nullish(),
      Contact: z.record(z.string(), z.unknown()).nullish(),
    }),
  ),
});

/** What a pause after an Opportunity's write leaves for the next pass (UpsertPause.leftOut). */
const LEFT_OUT = 'its Contacts and their roles';

/**
 * Leads and events into a Salesforce org over REST: Leads and Opportunities are upserted by
 * external-id fields in sObject Collections of 200, so a repeated batch changes nothing; the
 * other mirrored resources (bookings, appointments) have no Salesforce object here.
 */
export class SalesforceDestination implements Destination {
  readonly capabilities: DestinationCapabilities = {
    maxBatchSize: BATCH,
    atomicBatches: false,
    countsChanges: true,
  };
  readonly mapping: SalesforceMapping;
  readonly client: SalesforceClient;
  private fields: Promise<ObjectFields> | undefined;

  constructor(private readonly options: SalesforceDestinationOptions) {
    this.mapping = salesforceMapping(options.mapping, options.mappingFile);
    this.client = new SalesforceClient(options);
  }

  describe(): DestinationDescription {
    return crmDescription('salesforce', 'Salesforce', this.options.loginUrl);
  }

  /** A CRM has no tables that could be removed under the ledger: nothing to make. */
  ensureTable(_resource: Resource): Promise<boolean> {
    return Promise.resolve(false);
  }

  /** Checks the org has the external-id fields and every mapped field (made by an admin). */
  async ensureSchema(_tables: readonly TableSpec[]): Promise<SchemaChanges> {
    await this.objectFields();
    return { createdTables: [], addedColumns: [] };
  }

  async upsert(resource: Resource, records: readonly MirrorRecord[]): Promise<UpsertResult> {
    const table = crmBatch('Salesforce', BATCH, resource, records);
    if (!table) return passedOver(records);
    const fields = await this.objectFields();
    const latest = [...new Map(records.map((r) => [r.id, r])).values()];
    const pause = new UpsertPause();
    const outcome =
      table === 'leads'
        ? await this.upsertLeads(latest, fields)
        : await this.upsertEvents(latest, fields, pause);
    // A pause after the Opportunities' request (one request: all of them answered, or none)
    // leaves them written, their Contacts or roles not made: said with the pause, in part.
    pause.throwIfPaused(
      records,
      (r) => outcome.ok.has(r.id) || outcome.failed.has(r.id),
      (part) => upsertResult(part, outcome),
    );
    return upsertResult(records, outcome);
  }

  /** Deletes (to the Recycle Bin) the Leads and Opportunities of deleted records, or keeps them. */
  async markDeleted(resource: Resource, ids: readonly string[]): Promise<DeletionResult> {
    if (resource !== 'leads' && resource !== 'events') return { marked: 0 };
    if (this.mapping[resource].onDelete !== 'delete') return { marked: 0 };
    const sobject = resource === 'leads' ? 'Lead' : 'Opportunity';
    const key = SALESFORCE_KEYS[sobject];
    /** Salesforce Id → the mirror's id of the record, for the refusals. */
    const found = new Map<string, string>();
    for (const id of ids) {
      // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_upsert.htm
      // — a record read by external id: 404 when none, 300 when the value is not unique.
      const answer = await this.client.call(
        'GET',
        `/sobjects/${sobject}/${key}/${encodeURIComponent(id)}`,
      );
      if (answer.status === 404) continue;
      if (answer.status === 300) {
        throw new DestinationSchemaError(
          `Salesforce has several ${sobject} records with ${key} ${id}: make ${key} unique in the org`,
        );
      }
      const found1 = (answer.body as { Id?: unknown } | null)?.Id;
      if (answer.status !== 200 || typeof found1 !== 'string') {
        throw new DestinationRecordError(
          `Salesforce answered ${answer.status} reading ${sobject} ${key} ${id}`,
        );
      }
      found.set(found1, id);
    }
    let marked = 0;
    const refused: DeletionRefusal[] = [];
    for (const part of chunks([...found.keys()], BATCH)) {
      // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections_delete.htm
      // — one result per id, in the order asked; with allOrNone false an item's error (a
      // locked record, ENTITY_IS_DELETED) is that record's alone.
      const answer = await this.client.ok('DELETE', '/composite/sobjects', {
        searchParams: { ids: part.join(','), allOrNone: 'false' },
      });
      const parsed = deleteResults.safeParse(answer.body);
      if (!parsed.success) {
        throw new DestinationUnavailableError(
          'Salesforce answered a delete with something other than a result per record',
        );
      }
      // Matched by id where the result names one, else by its place (the order asked).
      const byId = new Map(parsed.data.flatMap((r) => (r.id ? [[r.id, r] as const] : [])));
      part.forEach((salesforceId, i) => {
        const result = byId.get(salesforceId) ?? parsed.data[i];
        if (result?.success) {
          marked += 1;
          return;
        }
        // Already gone: in the Recycle Bin, or deleted for good, since it was read (a webhook's
        // drain and a sweep deleting the same record, someone in Salesforce). What was asked
        // is so; not counted as marked by this call, which did not mark it.
        if (result?.errors.some((e) => ALREADY_GONE.has(errorCodeOf(e) ?? ''))) return;
        // Refused, or not answered for: never dropped unsaid. The record stays in Salesforce,
        // and the mirror leaves it live in the ledger so that the next full pass tries again.
        const reason = result
          ? reasonOf({ id: salesforceId, errors: result.errors })
          : { code: 'NO_RESULT', message: 'Salesforce answered with no result for this record' };
        refused.push({ id: found.get(salesforceId) ?? salesforceId, ...shortReason(reason) });
      });
    }
    return refused.length > 0 ? { marked, refused } : { marked };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private objectFields(): Promise<ObjectFields> {
    this.fields ??= (async () => {
      const fields = await describeObjects(this.client);
      const missing = missingFields(fields, this.mapping);
      if (missing.length > 0) {
        throw new DestinationSchemaError(
          `Salesforce has no field ${missing.join(', ')}: create ${missing.length > 1 ? 'them' : 'it'} (docs/crm.md, Salesforce) or change ${mappingSetting(mappingSource('salesforce', this.options.mappingFile))}, then check with 'ebsync destinations setup salesforce'`,
        );
      }
      const unsuited = unsuitedMapping(fields, this.mapping, this.options.mappingFile);
      if (unsuited) throw new DestinationSchemaError(unsuited);
      return fields;
    })().catch((error: unknown) => {
      this.fields = undefined;
      throw error;
    });
    return this.fields;
  }

  private values(
    table: 'leads' | 'events',
    sobject: 'Lead' | 'Opportunity',
    map: Record<string, string>,
    record: MirrorRecord,
    fields: ObjectFields,
  ): Record<string, JsonValue> {
    const out: Record<string, JsonValue> = {};
    for (const [field, column] of Object.entries(map)) {
      out[field] = fieldValue(table, column, fields[sobject].get(field), record.attributes[column]);
    }
    return out;
  }

  /**
   * One sObject Collections upsert by an external id; item failures are returned, never
   * retried (allOrNone false: the other records of the request are written). Given a pause,
   * the records of requests it stopped fail with its reason (Contacts, after their
   * Opportunities: those are written in part); without one, a pause is thrown.
   */
  private async collectionUpsert(
    sobject: 'Lead' | 'Opportunity' | 'Contact',
    records: { key: string; values: Record<string, JsonValue> }[],
    pause?: UpsertPause,
  ): Promise<{ ok: Map<string, ItemResult>; failed: Map<string, ItemFailure> }> {
    const field = SALESFORCE_KEYS[sobject];
    const ok = new Map<string, ItemResult>();
    const failed = new Map<string, ItemFailure>();
    for (const part of chunks(records, BATCH)) {
      const send = () =>
        this.client.ok('PATCH', `/composite/sobjects/${sobject}/${field}`, {
          json: {
            allOrNone: false,
            records: part.map((r) => ({
              attributes: { type: sobject },
              ...r.values,
              [field]: r.key,
            })),
          },
        });
      const answer = pause ? await pause.unlessPaused(send) : await send();
      if (!answer) {
        if (pause) for (const r of part) failed.set(r.key, pausedFailure(r.key, pause));
        continue;
      }
      const results = Array.isArray(answer.body) ? (answer.body as ItemResult[]) : [];
      part.forEach((r, i) => {
        const result = results[i];
        if (result?.success && typeof result.id === 'string') ok.set(r.key, result);
        else failed.set(r.key, { id: r.key, errors: result?.errors ?? [] });
      });
    }
    return { ok, failed };
  }

  /**
   * The contact roles the Opportunities `ids` have, by Opportunity Id: the emails of their
   * Contacts (the external id, or Email for a Contact made by hand) and whether one is
   * primary. One query per batch (and its further pages), none without ids; after a pause,
   * what was read before it.
   */
  private async contactRoles(
    ids: readonly string[],
    pause: UpsertPause,
  ): Promise<Map<string, LinkedContacts>> {
    const linked = new Map<string, LinkedContacts>();
    const key = SALESFORCE_KEYS.Contact;
    for (const part of chunks(ids, BATCH)) {
      // Salesforce Ids are letters and digits only: nothing to quote in them.
      const list = part.filter((id) => /^[A-Za-z0-9]+$/.test(id)).map((id) => `'${id}'`);
      if (list.length === 0) continue;
      // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_query.htm
      // — SOQL over GET; a parent's fields through its lookup (Contact of ContactId). 200 Ids
      // keep the URL far below the REST API's 16,384-byte limit.
      const q = `SELECT OpportunityId, IsPrimary, Contact.${key}, Contact.Email FROM OpportunityContactRole WHERE OpportunityId IN (${list.join(',')})`;
      let next: string | undefined = '/query';
      let params: Record<string, string> | undefined = { q };
      while (next !== undefined) {
        const resource: string = next;
        const searchParams = params;
        const answer = await pause.unlessPaused(() =>
          this.client.ok('GET', resource, searchParams ? { searchParams } : {}),
        );
        if (!answer) return linked;
        const page = queryPage.safeParse(answer.body);
        if (!page.success || (!page.data.done && !page.data.nextRecordsUrl)) {
          throw new DestinationUnavailableError(
            'Salesforce answered a query with something other than a page of records',
          );
        }
        for (const role of page.data.records) {
          const entry = linked.get(role.OpportunityId) ?? { emails: new Set(), primary: false };
          for (const email of [role.Contact?.[key], role.Contact?.Email]) {
            if (typeof email === 'string') entry.emails.add(email.trim().toLowerCase());
          }
          entry.primary ||= role.IsPrimary === true;
          linked.set(role.OpportunityId, entry);
        }
        // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm
        // — more than a batch (2,000 by default): done false, and the next one's URL.
        next = page.data.done ? undefined : page.data.nextRecordsUrl;
        params = undefined;
      }
    }
    return linked;
  }

  private async upsertLeads(leads: MirrorRecord[], fields: ObjectFields): Promise<UpsertOutcome> {
    const noEmail = new Set<string>();
    const { ok, failed } = await this.collectionUpsert(
      'Lead',
      leads.map((lead) => {
        const values = this.values('leads', 'Lead', this.mapping.leads.lead, lead, fields);
        // LastName and Company are required on a Lead.
        for (const required of ['LastName', 'Company']) {
          if (blank(values[required])) values[required] = NOT_PROVIDED;
        }
        if (typeof values.Email === 'string') values.Email = emailsIn(values.Email)[0] ?? null;
        // Only when the mapping fills Email at all: a mapping without it asks for none.
        if ('Email' in values && !values.Email) noEmail.add(lead.id);
        return { key: lead.id, values };
      }),
    );
    return { ok, failed, partial: new Map(), noEmail };
  }

  private async upsertEvents(
    events: MirrorRecord[],
    fields: ObjectFields,
    pause: UpsertPause,
  ): Promise<UpsertOutcome> {
    const m = this.mapping.events;
    const today = new Date().toISOString().slice(0, 10);
    const opportunities = await this.collectionUpsert(
      'Opportunity',
      events.map((event) => {
        const values = this.values('events', 'Opportunity', m.opportunity, event, fields);
        // Name, StageName and CloseDate are required on an Opportunity.
        if (blank(values.Name)) values.Name = `Event ${event.id}`;
        if (!values.CloseDate) values.CloseDate = today;
        const status = eventStageKey(event.attributes);
        values.StageName = m.stages[status] ?? m.stages['*'] ?? 'Prospecting';
        return { key: event.id, values };
      }),
    );
    // Contacts and roles for every Opportunity written, new or not: one written before may
    // lack them (a refused Contact or role, a pause: written in part), or its event may have
    // a customer email since; only the emails it is not linked to yet are sent, so a role is
    // made once and a contact linked already is left as someone may have edited it.
    const emailsOf = new Map(
      events
        .filter((e) => opportunities.ok.has(e.id))
        .map((e) => [e.id, emailsIn(e.attributes.customer_emails)] as const)
        .filter(([, list]) => list.length > 0),
    );
    const updated = [...emailsOf.keys()].flatMap((eventId) => {
      const result = opportunities.ok.get(eventId);
      return result?.id && !result.created ? [result.id] : [];
    });
    // Paused at it: nothing is known linked, and the Contacts that follow pause as well.
    const linked = await this.contactRoles(updated, pause);
    const missingOf = new Map(
      [...emailsOf].map(([eventId, list]) => {
        const has = linked.get(opportunities.ok.get(eventId)?.id ?? '');
        // Each email keeps its place: the first is the primary contact when none is yet.
        const missing = list.flatMap((email, i) =>
          has?.emails.has(email) ? [] : [{ email, primary: i === 0 && !has?.primary }],
        );
        return [eventId, missing] as const;
      }),
    );
    const emails = [...new Set([...missingOf.values()].flat().map((m) => m.email))];
    const contacts = await this.collectionUpsert(
      'Contact',
      emails.map((email) => ({
        key: email,
        values: {
          Email: email,
          LastName: email.slice(0, fields.Contact.get('LastName')?.length || undefined),
        },
      })),
      pause,
    );
    const roles = [...missingOf].flatMap(([eventId, list]) => {
      const opportunity = opportunities.ok.get(eventId)?.id;
      return list.flatMap(({ email, primary }) => {
        const contact = contacts.ok.get(email)?.id;
        return opportunity && contact
          ? [
              {
                attributes: { type: 'OpportunityContactRole' },
                OpportunityId: opportunity,
                ContactId: contact,
                Role: m.contactRole,
                IsPrimary: primary,
              },
            ]
          : [];
      });
    });
    // A refused Contact or role leaves its Opportunity written but unlinked: reported as such.
    const partial = new Map<string, ItemFailure>();
    for (const [eventId, list] of missingOf) {
      const refusedContact = list.map(({ email }) => contacts.failed.get(email)).find(Boolean);
      if (refusedContact) partial.set(eventId, refusedContact);
    }
    const eventOf = new Map([...opportunities.ok].map(([eventId, r]) => [r.id, eventId]));
    for (const part of chunks(roles, BATCH)) {
      // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections_create.htm
      const answer = await pause.unlessPaused(() =>
        this.client.ok('POST', '/composite/sobjects', {
          json: { allOrNone: false, records: part },
        }),
      );
      if (!answer) {
        for (const role of part) {
          const eventId = eventOf.get(role.OpportunityId);
          if (eventId && !partial.has(eventId)) partial.set(eventId, pausedFailure(eventId, pause));
        }
        continue;
      }
      (answer.body as ItemResult[]).forEach((r, i) => {
        const eventId = eventOf.get(part[i]?.OpportunityId);
        if (!r.success && eventId && !partial.has(eventId))
          partial.set(eventId, { id: eventId, errors: r.errors ?? [] });
      });
    }
    // Every event written with no customer email, new or not: one written before has no
    // contact either, and a rewrite counts it as its first write did.
    const noEmail = new Set(
      events.filter((e) => emailsIn(e.attributes.customer_emails).length === 0).map((e) => e.id),
    );
    return { ok: opportunities.ok, failed: opportunities.failed, partial, noEmail };
  }
}

export function openSalesforceDestination(
  options: SalesforceDestinationOptions,
): SalesforceDestination {
  return new SalesforceDestination(options);
}
