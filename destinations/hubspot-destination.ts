import { z } from 'zod';
import type { HubSpotMappingOverrides } from '../config/hubspot-mapping.js';
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
  mappingEntry,
  mappingSource,
  passedOver,
  refusalsOf,
  shortReason,
} from './crm-fields.js';
import { UpsertPause } from './crm-pause.js';
import { DestinationSchemaError, DestinationWriteError } from './errors.js';
import {
  HubSpotClient,
  hubspotRefusal,
  notUnique,
  type HubSpotClientOptions,
} from './hubspot-client.js';
import { EVENT_KEY, LEAD_KEY, hubspotMapping, type HubSpotMapping } from './hubspot-mapping.js';
import type { ColumnType, JsonValue, MirrorRecord, Resource } from './record.js';
import { TABLES, type TableSpec } from './tables.js';

export interface HubSpotDestinationOptions extends HubSpotClientOptions {
  mapping?: HubSpotMappingOverrides;
  /** The config file the mapping came from, which its refusals name (else its variable). */
  mappingFile?: string;
}

// https://developers.hubspot.com/docs/api-reference/error-handling — a batch answer: its
// results, and (207) one error per failed part with `category`, `message` and `context` (a
// map of lists of strings); every field of an error may be missing, so all are optional.
// The SDK reads a result's `new` into `_new` (a reserved word in its generated models).
const batchResult = z.looseObject({
  id: z.string(),
  _new: z.boolean().optional(),
  properties: z.record(z.string(), z.string().nullable()).optional(),
});
const batchError = z.looseObject({
  category: z.string().optional(),
  message: z.string().optional(),
  context: z.record(z.string(), z.unknown()).optional(),
});
const batchAnswer = z.looseObject({
  results: z.array(batchResult).optional(),
  errors: z.array(batchError).optional(),
});
// https://developers.hubspot.com/docs/api-reference/latest/crm/associations/associate-records/batch/create-associations
// — each linked pair comes back as `{from: {id}, to: {id}, associationSpec}`. The SDK's
// model names `from` `_from` (a 200 it reads); a 207 reaches ebsync as HubSpot's own JSON.
const objectRef = z.looseObject({ id: z.union([z.number(), z.string()]) });
const associationAnswer = z.looseObject({
  results: z
    .array(
      z.looseObject({ _from: objectRef.optional(), from: objectRef.optional(), to: objectRef }),
    )
    .optional(),
  errors: z.array(batchError).optional(),
});
type BatchResult = z.infer<typeof batchResult>;

/** A deal to link to a contact, and the record the deal stands for. */
interface Pair {
  record: string;
  deal: string;
  contact: string;
}
type BatchError = z.infer<typeof batchError>;

/** What one batch upsert came to, by input id (lower-cased emails for contacts). */
interface BatchOutcome {
  written: Map<string, BatchResult>;
  refused: Map<string, RefusalReason>;
}

/** The deals of a batch of records: written, refused, or written without a contact. */
interface DealsOutcome {
  deals: Map<string, BatchResult>;
  refused: Map<string, RefusalReason>;
  partial: Map<string, RefusalReason>;
  /** Deals written with no email address to find a contact by (UpsertResult.withoutEmail). */
  withoutEmail: number;
}

function readBatch(type: string, body: unknown): z.infer<typeof batchAnswer> {
  const parsed = batchAnswer.safeParse(body);
  if (!parsed.success) {
    throw new DestinationWriteError(`HubSpot's answer to a ${type} batch could not be read`);
  }
  return parsed.data;
}

const reasonOf = (error: BatchError): RefusalReason => ({
  code: error.category ?? 'ERROR',
  message: error.message ?? 'no reason given',
});

/** The strings a 207 error's context lists under `name` (HubSpot gives lists; one string too). */
function listed(error: BatchError, name: string): string[] {
  const value = error.context?.[name];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/**
 * The input ids a 207 error concerns: by the `objectWriteTraceId` ebsync gives each input
 * (its index; HubSpot's documented way to tell failed inputs apart), else by input ids the
 * context names (`ids`, `id`, or the idProperty's name). Names that match no input are
 * dropped, so an error is never pinned on the wrong record.
 */
function inputsOf(
  error: BatchError,
  ids: readonly string[],
  key: (id: string) => string,
  idProperty: string,
): string[] {
  const traced = listed(error, 'objectWriteTraceId')
    .filter((t) => /^\d+$/.test(t))
    .flatMap((t) => ids[Number(t)] ?? []);
  if (traced.length > 0) return traced.map(key);
  const known = new Set(ids.map(key));
  return [...listed(error, 'ids'), ...listed(error, 'id'), ...listed(error, idProperty)]
    .map(key)
    .filter((id) => known.has(id));
}

// https://developers.hubspot.com/docs/api-reference/error-handling — the category of a batch
// read's error for inputs that match no record: the only one that says a deal is gone.
const NOT_FOUND = 'OBJECT_NOT_FOUND';

/**
 * The inputs of a batch read by `key` that HubSpot did not read for another reason than their
 * deal being gone, with that reason: such a deal may still be live, so its deletion is
 * refused, never taken as done. A not-found error's inputs are gone. An error naming no input
 * concerns every input not read and not named elsewhere: refused with its reason, or gone if
 * the only such errors are not-found ones. An input neither read nor named in any error is
 * refused as well (none is dropped unsaid).
 */
function unread(
  inputs: readonly string[],
  key: string,
  answer: z.infer<typeof batchAnswer>,
): Map<string, RefusalReason> {
  const read = new Set(
    (answer.results ?? []).flatMap((r) => {
      const id = r.properties?.[key];
      return typeof id === 'string' ? [id] : [];
    }),
  );
  const gone = new Set<string>();
  const refused = new Map<string, RefusalReason>();
  const unplaced: RefusalReason[] = [];
  let goneUnnamed = false;
  for (const error of answer.errors ?? []) {
    const concerned = inputsOf(error, inputs, (id) => id, key).filter((id) => !read.has(id));
    const notFound = error.category === NOT_FOUND;
    if (concerned.length === 0) {
      if (notFound) goneUnnamed = true;
      else unplaced.push(reasonOf(error));
    }
    for (const id of concerned) {
      if (notFound) gone.add(id);
      else if (!refused.has(id)) refused.set(id, reasonOf(error));
    }
  }
  const [first] = unplaced;
  const unnamed: RefusalReason | undefined = first
    ? { code: first.code, message: unplaced.map((r) => r.message).join('; ') }
    : goneUnnamed
      ? undefined
      : { code: 'NO_RESULT', message: 'HubSpot answered with neither the deal nor an error' };
  for (const id of inputs) {
    if (read.has(id) || gone.has(id) || refused.has(id)) continue;
    if (unnamed) refused.set(id, unnamed);
  }
  return new Map([...refused].map(([id, reason]) => [id, shortReason(reason)]));
}

// https://developers.hubspot.com/docs/api/crm/properties — the properties of an object type,
// each with its `type`; only the fields read here are checked.
const propertyList = z.looseObject({
  results: z.array(z.looseObject({ name: z.string(), type: z.string() })),
});

/**
 * The column types a property of each HubSpot type takes as ebsync sends them (money as a
 * decimal, a date as YYYY-MM-DD, a time as ISO 8601); a type not listed (string,
 * enumeration, phone_number…) takes any. A date property holds a day (midnight UTC), so it
 * takes no time of day.
 */
const COLUMNS_FOR: Record<string, { what: string; columns: readonly ColumnType[] }> = {
  number: { what: 'a money or number column', columns: ['cents', 'integer', 'number'] },
  date: { what: 'a date column', columns: ['date'] },
  datetime: { what: 'a date or time column', columns: ['date', 'timestamp'] },
  bool: { what: 'a boolean column', columns: ['boolean'] },
};

/** The property maps of a mapping, by the HubSpot object type their properties are of. */
const MAPPED: readonly {
  object: 'contacts' | 'deals';
  table: 'leads' | 'events';
  part: 'contact' | 'deal';
  map: (mapping: HubSpotMapping) => Record<string, string>;
}[] = [
  { object: 'contacts', table: 'leads', part: 'contact', map: (m) => m.leads.contact },
  { object: 'deals', table: 'leads', part: 'deal', map: (m) => m.leads.deal },
  { object: 'deals', table: 'events', part: 'deal', map: (m) => m.events.deal },
];

/** The scope of the private app that reads an object type's properties (docs/crm.md). */
const SCHEMA_SCOPES = {
  contacts: 'crm.schemas.contacts.read',
  deals: 'crm.schemas.deals.write',
} as const;

/** The portal's properties of one object type, by name, with their types: one call. */
async function propertyTypes(
  client: HubSpotClient,
  object: 'contacts' | 'deals',
): Promise<Map<string, string>> {
  const name = `GET /crm/v3/properties/${object}`;
  const answer = await client.call(name, (sdk) =>
    sdk.crm.properties.coreApi.getAllWithHttpInfo(object),
  );
  // A 403 names the scope: the contact properties' came with their check, and a token made
  // before lacks it.
  if (answer.status >= 300) throw hubspotRefusal(answer, name, SCHEMA_SCOPES[object]);
  const parsed = propertyList.safeParse(answer.body);
  if (!parsed.success) {
    throw new DestinationWriteError(`HubSpot's answer to ${name} could not be read`);
  }
  return new Map(parsed.data.results.map((p) => [p.name, p.type]));
}

/**
 * Why the mapping puts a column into a contact or deal property the portal lacks, or whose
 * type cannot take it (text into a number or a date), which HubSpot would refuse record by
 * record; or undefined. Two calls: the portal's contact properties and its deal properties.
 */
export async function unsuitedMapping(
  client: HubSpotClient,
  mapping: HubSpotMapping,
  mappingFile?: string,
): Promise<string | undefined> {
  const types = {
    contacts: await propertyTypes(client, 'contacts'),
    deals: await propertyTypes(client, 'deals'),
  };
  const source = mappingSource('hubspot', mappingFile);
  const out: string[] = [];
  for (const { object, table, part, map } of MAPPED) {
    for (const [property, column] of Object.entries(map(mapping))) {
      const entry = `${mappingEntry(source, `${table}.${part}.${property}`)}='${column}' is not allowed`;
      const type = types[object].get(property);
      if (type === undefined) {
        // HubSpot would refuse every record for it, one by one: said once, before any write.
        out.push(
          `${entry}: HubSpot has no ${part} property ${property} (create it there, or map the column to one it has)`,
        );
        continue;
      }
      const takes = COLUMNS_FOR[type];
      const columnType = TABLES[table].columns.find((c) => c.name === column)?.type;
      if (!takes || !columnType || takes.columns.includes(columnType)) continue;
      out.push(
        `${entry}: HubSpot ${part} property ${property} is of type ${type}, which takes ${takes.what} (${takes.columns.join(', ')}), and ${column} is ${columnType}`,
      );
    }
  }
  return out.length > 0 ? `${out.join('; ')} (docs/mirror.md, Tables)` : undefined;
}

// https://developers.hubspot.com/docs/api/crm/understanding-the-crm — 100 inputs per batch.
const BATCH = 100;

/** What a pause after a deal's write leaves for the next pass (UpsertPause.leftOut). */
const LEFT_OUT = 'its contacts and their links to the deal';

/** A batch paused before its deals were written: nothing of it to say. */
const NO_DEALS = (): DealsOutcome => ({
  deals: new Map(),
  refused: new Map(),
  partial: new Map(),
  withoutEmail: 0,
});

/** The HubSpot value of a column: strings throughout; money from cents to a decimal amount. */
function propertyValue(table: 'leads' | 'events', column: string, value: JsonValue | undefined) {
  if (value === undefined || value === null) return '';
  const type = TABLES[table].columns.find((c) => c.name === column)?.type;
  if (type === 'cents' && typeof value === 'number') return (value / 100).toFixed(2);
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function properties(
  table: 'leads' | 'events',
  map: Record<string, string>,
  record: MirrorRecord,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [property, column] of Object.entries(map)) {
    out[property] = propertyValue(table, column, record.attributes[column]);
  }
  return out;
}

/**
 * Leads and events into a HubSpot portal (CRM v3 objects, v4 associations). Writes are
 * upserts keyed by unique properties, so a repeated batch changes nothing; the other mirrored
 * resources (bookings, appointments) have no HubSpot object and are passed over.
 */
export class HubSpotDestination implements Destination {
  readonly capabilities: DestinationCapabilities = {
    maxBatchSize: BATCH,
    atomicBatches: false,
    countsChanges: true,
  };
  readonly mapping: HubSpotMapping;
  private readonly client: HubSpotClient;
  private schemaChecked = false;

  constructor(private readonly options: HubSpotDestinationOptions) {
    this.mapping = hubspotMapping(options.mapping, options.mappingFile);
    this.client = new HubSpotClient(options);
  }

  describe(): DestinationDescription {
    return crmDescription('hubspot', 'HubSpot', this.options.baseUrl);
  }

  /** A CRM has no tables that could be removed under the ledger: nothing to make. */
  ensureTable(_resource: Resource): Promise<boolean> {
    return Promise.resolve(false);
  }

  /**
   * HubSpot's schema is the portal's: ebsync only checks that the unique deal properties its
   * upserts match on exist (made once by `ebsync destinations setup hubspot`).
   */
  async ensureSchema(_tables: readonly TableSpec[]): Promise<SchemaChanges> {
    if (!this.schemaChecked) {
      // First, while the day's allowance lasts: a DAILY refusal pauses until the portal's midnight.
      await this.client.learnPortalClock();
      for (const name of [LEAD_KEY, EVENT_KEY]) {
        const answer = await this.client.call(`GET /crm/v3/properties/deals/${name}`, (sdk) =>
          sdk.crm.properties.coreApi.getByNameWithHttpInfo('deals', name),
        );
        // Only a 404 says the property is missing. Any other refusal (a 403 for a scope the
        // private app lacks, a 400) is HubSpot's own reason, which setup would not cure.
        if (answer.status === 404) {
          throw new DestinationSchemaError(
            `HubSpot has no unique-value deal property ${name}: run 'ebsync destinations setup hubspot' once`,
          );
        }
        if (answer.status !== 200)
          throw hubspotRefusal(answer, `GET /crm/v3/properties/deals/${name}`);
        const unique = (answer.body as { hasUniqueValue?: unknown } | null)?.hasUniqueValue;
        if (unique !== true) throw notUnique(name);
      }
      const unsuited = await unsuitedMapping(this.client, this.mapping, this.options.mappingFile);
      if (unsuited) throw new DestinationSchemaError(unsuited);
      this.schemaChecked = true;
    }
    return { createdTables: [], addedColumns: [] };
  }

  async upsert(resource: Resource, records: readonly MirrorRecord[]): Promise<UpsertResult> {
    const table = crmBatch('HubSpot', BATCH, resource, records);
    if (!table) return passedOver(records);
    const latest = [...new Map(records.map((r) => [r.id, r])).values()];
    const pause = new UpsertPause();
    const outcome =
      table === 'leads'
        ? await this.upsertLeads(latest, pause)
        : await this.upsertEvents(latest, pause);
    // A pause after the deals' batch (it is one call: all of it or none) leaves them
    // written, their contacts or links not made: said with the pause, written in part.
    pause.throwIfPaused(
      records,
      (r) => outcome.deals.has(r.id) || outcome.refused.has(r.id),
      (part) => this.order(part, outcome),
    );
    return this.order(records, outcome);
  }

  /** Archives the deals of deleted leads and events (or keeps them, as the mapping says). */
  async markDeleted(resource: Resource, ids: readonly string[]): Promise<DeletionResult> {
    const key = resource === 'leads' ? LEAD_KEY : resource === 'events' ? EVENT_KEY : undefined;
    if (!key || this.mapping[resource as 'leads' | 'events'].onDelete !== 'archive') {
      return { marked: 0 };
    }
    let archived = 0;
    const refused: DeletionRefusal[] = [];
    for (const part of chunks(ids, BATCH)) {
      // https://developers.hubspot.com/docs/api/crm/deals — read by a unique property, then
      // archive by HubSpot id.
      const read = await this.client.ok('POST /crm/v3/objects/deals/batch/read', (sdk) =>
        sdk.crm.deals.batchApi.readWithHttpInfo({
          idProperty: key,
          properties: [key],
          propertiesWithHistory: [],
          inputs: part.map((id) => ({ id })),
        }),
      );
      const answer = readBatch('deals', read.body);
      const found = answer.results ?? [];
      for (const [id, reason] of unread(part, key, answer)) refused.push({ id, ...reason });
      if (found.length === 0) continue;
      // The batch archive answers 204 for the whole batch, with no answer per deal: it either
      // archives them all or fails as a call (thrown), so no deal is refused unsaid here.
      await this.client.ok('POST /crm/v3/objects/deals/batch/archive', (sdk) =>
        sdk.crm.deals.batchApi.archiveWithHttpInfo({ inputs: found.map((r) => ({ id: r.id })) }),
      );
      archived += found.length;
    }
    return refused.length > 0 ? { marked: archived, refused } : { marked: archived };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Upserts by a unique property. Item errors (207) are the inputs' own (a value a
   * validation rule refuses, a unique value another record holds): returned, never retried.
   */
  private async batchUpsert(
    type: 'contacts' | 'deals',
    idProperty: string,
    inputs: { id: string; properties: Record<string, string> }[],
  ): Promise<BatchOutcome> {
    const written = new Map<string, BatchResult>();
    const refused = new Map<string, RefusalReason>();
    if (inputs.length === 0) return { written, refused };
    const key = (id: string) => (idProperty === 'email' ? id.toLowerCase() : id);
    // https://developers.hubspot.com/docs/api/crm/contacts — batch upsert by idProperty;
    // https://developers.hubspot.com/docs/api-reference/error-handling — a unique
    // objectWriteTraceId per input names it in the error of a failed one.
    const batch = {
      inputs: inputs.map((input, i) => ({ ...input, idProperty, objectWriteTraceId: String(i) })),
    };
    const answer = await this.client.ok(`POST /crm/v3/objects/${type}/batch/upsert`, (sdk) =>
      type === 'contacts'
        ? sdk.crm.contacts.batchApi.upsertWithHttpInfo(batch)
        : sdk.crm.deals.batchApi.upsertWithHttpInfo(batch),
    );
    const body = readBatch(type, answer.body);
    for (const result of body.results ?? []) {
      const id = result.properties?.[idProperty];
      if (typeof id === 'string') written.set(key(id), result);
    }
    const ids = inputs.map((i) => i.id);
    const unplaced: RefusalReason[] = [];
    for (const error of body.errors ?? []) {
      const concerned = inputsOf(error, ids, key, idProperty);
      if (concerned.length === 0) unplaced.push(reasonOf(error));
      for (const id of concerned) if (!written.has(id)) refused.set(id, reasonOf(error));
    }
    // An input HubSpot neither wrote nor named in an error is refused, never dropped: with
    // the reasons of the errors that named no input, else with a reason saying so.
    const [first] = unplaced;
    const unnamed: RefusalReason = first
      ? { code: first.code, message: unplaced.map((r) => r.message).join('; ') }
      : { code: 'NO_RESULT', message: 'HubSpot answered with neither a result nor an error' };
    for (const id of ids.map(key)) {
      if (!written.has(id) && !refused.has(id)) refused.set(id, unnamed);
    }
    return { written, refused };
  }

  /**
   * Upserts contacts by email. Those a pause left unwritten are refused with the pause's
   * reason, so their deals are written in part.
   */
  private async contactsFor(
    pause: UpsertPause,
    emails: Iterable<string>,
    values: Map<string, Record<string, string>> = new Map(),
  ): Promise<BatchOutcome> {
    const inputs = [...new Set(emails)].map((email) => ({
      id: email,
      properties: values.get(email) ?? {},
    }));
    const all: BatchOutcome = { written: new Map(), refused: new Map() };
    for (const part of chunks(inputs, BATCH)) {
      const outcome = await pause.unlessPaused(() => this.batchUpsert('contacts', 'email', part));
      if (!outcome) {
        for (const { id } of part) all.refused.set(id, pause.leftOut(LEFT_OUT));
        continue;
      }
      for (const [k, v] of outcome.written) all.written.set(k, v);
      for (const [k, v] of outcome.refused) all.refused.set(k, v);
    }
    return all;
  }

  /**
   * Links deals to contacts; the records whose pair HubSpot did not link (a 207 with errors,
   * or a pause before its call), with why: their deals are written, so they are reported as
   * written in part.
   */
  private async associate(pause: UpsertPause, pairs: Pair[]): Promise<Map<string, RefusalReason>> {
    const unlinked = new Map<string, RefusalReason>();
    // https://developers.hubspot.com/docs/api/crm/associations — v4 default associations;
    // a 207 (some pairs not linked) is an answer the SDK's spec does not list, so the client
    // turns its exception back into the answer.
    for (const part of chunks(pairs, BATCH)) {
      const answer = await pause.unlessPaused(() =>
        this.client.ok('POST /crm/v4/associations/deals/contacts/batch/associate/default', (sdk) =>
          sdk.crm.associations.v4.batchApi.createDefaultWithHttpInfo('deals', 'contacts', {
            inputs: part.map((p) => ({ _from: { id: p.deal }, to: { id: p.contact } })),
          }),
        ),
      );
      if (!answer) {
        for (const p of part)
          if (!unlinked.has(p.record)) unlinked.set(p.record, pause.leftOut(LEFT_OUT));
        continue;
      }
      const body = associationAnswer.safeParse(answer.body);
      if (!body.success) {
        throw new DestinationWriteError(
          "HubSpot's answer to an association batch could not be read",
        );
      }
      const linked = new Set(
        (body.data.results ?? []).map((r) => `${(r._from ?? r.from)?.id}|${r.to.id}`),
      );
      const [error] = body.data.errors ?? [];
      const reason: RefusalReason = error
        ? reasonOf(error)
        : { code: 'NO_RESULT', message: 'HubSpot did not confirm the deal-contact association' };
      for (const p of part) {
        if (!linked.has(`${p.deal}|${p.contact}`) && !unlinked.has(p.record))
          unlinked.set(p.record, reason);
      }
    }
    return unlinked;
  }

  /**
   * The deals of a batch of leads or events, in one call (all of them answered, or none), in
   * the stage `stageOf` gives; undefined when a pause came before it or at it.
   */
  private upsertDeals(
    pause: UpsertPause,
    table: 'leads' | 'events',
    records: readonly MirrorRecord[],
    stageOf: (record: MirrorRecord) => string,
  ): Promise<BatchOutcome | undefined> {
    const map = this.mapping[table].deal;
    const name = table === 'leads' ? 'Lead' : 'Event';
    return pause.unlessPaused(() =>
      this.batchUpsert(
        'deals',
        table === 'leads' ? LEAD_KEY : EVENT_KEY,
        records.map((record) => {
          const values = properties(table, map, record);
          if (!values.dealname) values.dealname = `${name} ${record.id}`;
          const dealstage = stageOf(record);
          return {
            id: record.id,
            properties: { ...values, pipeline: this.mapping.pipeline, dealstage },
          };
        }),
      ),
    );
  }

  private async upsertLeads(leads: MirrorRecord[], pause: UpsertPause): Promise<DealsOutcome> {
    const m = this.mapping.leads;
    const contactValues = new Map<string, Record<string, string>>();
    const emailOf = new Map<string, string>();
    for (const lead of leads) {
      const [email] = emailsIn(lead.attributes.email);
      if (!email) continue;
      emailOf.set(lead.id, email);
      contactValues.set(email, { ...properties('leads', m.contact, lead), email });
    }
    const contacts = await this.contactsFor(pause, contactValues.keys(), contactValues);
    const deals = await this.upsertDeals(pause, 'leads', leads, () => m.dealStage);
    // Paused before the deals (or at them): none of the batch is written.
    if (!deals) return NO_DEALS();
    const pairs: Pair[] = [];
    // A contact HubSpot refuses (an address it deems invalid) leaves its deal unlinked.
    const partial = new Map<string, RefusalReason>();
    for (const lead of leads) {
      const deal = deals.written.get(lead.id);
      const email = emailOf.get(lead.id) ?? '';
      const contact = contacts.written.get(email);
      if (deal && contact) pairs.push({ record: lead.id, deal: deal.id, contact: contact.id });
      const refusedContact = contacts.refused.get(email);
      if (deal && refusedContact) partial.set(lead.id, refusedContact);
    }
    for (const [id, reason] of await this.associate(pause, pairs))
      if (!partial.has(id)) partial.set(id, reason);
    const withoutEmail = leads.filter((l) => deals.written.has(l.id) && !emailOf.has(l.id)).length;
    return { deals: deals.written, refused: deals.refused, partial, withoutEmail };
  }

  private async upsertEvents(events: MirrorRecord[], pause: UpsertPause): Promise<DealsOutcome> {
    const m = this.mapping.events;
    const deals = await this.upsertDeals(
      pause,
      'events',
      events,
      (event) => m.stages[eventStageKey(event.attributes)] ?? m.stages['*'] ?? 'contractsent',
    );
    if (!deals) return NO_DEALS();
    // Contacts only for the deals written; a refused event is tried whole next pass.
    const emailsOf = new Map(
      events
        .filter((e) => deals.written.has(e.id))
        .map((e) => [e.id, emailsIn(e.attributes.customer_emails)]),
    );
    // Customers are upserted with their email only: what a lead wrote stays as it is.
    const contacts = await this.contactsFor(pause, [...emailsOf.values()].flat());
    const pairs: Pair[] = [];
    const partial = new Map<string, RefusalReason>();
    for (const [eventId, emails] of emailsOf) {
      const deal = deals.written.get(eventId);
      for (const email of emails) {
        const contact = contacts.written.get(email);
        if (deal && contact) pairs.push({ record: eventId, deal: deal.id, contact: contact.id });
        const refusedContact = contacts.refused.get(email);
        if (refusedContact && !partial.has(eventId)) partial.set(eventId, refusedContact);
      }
    }
    for (const [id, reason] of await this.associate(pause, pairs))
      if (!partial.has(id)) partial.set(id, reason);
    let withoutEmail = 0;
    for (const emails of emailsOf.values()) if (emails.length === 0) withoutEmail += 1;
    return { deals: deals.written, refused: deals.refused, partial, withoutEmail };
  }

  /**
   * Counts, keys (HubSpot deal ids) and refusals in the order of the records given. Refused
   * deals go to the mirror, which counts them and tries them again next pass.
   */
  private order(records: readonly MirrorRecord[], outcome: DealsOutcome): UpsertResult {
    let inserted = 0;
    let updated = 0;
    const keys = records.map((r) => outcome.deals.get(r.id)?.id ?? r.id);
    for (const id of new Set(records.map((r) => r.id))) {
      const result = outcome.deals.get(id);
      if (!result) continue;
      if (result._new) inserted += 1;
      else updated += 1;
    }
    const refused = refusalsOf(records, outcome.refused, outcome.partial);
    return {
      inserted,
      updated,
      unchanged: 0,
      keys,
      ...(refused.length > 0 ? { refused } : {}),
      ...(outcome.withoutEmail > 0 ? { withoutEmail: outcome.withoutEmail } : {}),
    };
  }
}

export function openHubSpotDestination(options: HubSpotDestinationOptions): HubSpotDestination {
  return new HubSpotDestination(options);
}
