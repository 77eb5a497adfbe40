import type { PipedriveMappingOverrides } from '../config/pipedrive-mapping.js';
import type {
  DeletionResult,
  Destination,
  DestinationCapabilities,
  DestinationDescription,
  RefusalReason,
  SchemaChanges,
  UpsertResult,
} from './destination.js';
import {
  crmBatch,
  crmDescription,
  emailsIn,
  eventStageKey,
  mappingEntry,
  mappingSource,
  passedOver,
  refusalsOf,
} from './crm-fields.js';
import { UpsertPause } from './crm-pause.js';
import { DestinationSchemaError, DestinationWriteError } from './errors.js';
import { PipedriveClient, PipedriveRefusedError } from './pipedrive-client.js';
import {
  PIPEDRIVE_EVENT_FIELD,
  PIPEDRIVE_LEAD_FIELD,
  pipedriveMapping,
  type PipedriveMapping,
} from './pipedrive-mapping.js';
import { dealFieldKeys } from './pipedrive-setup.js';
import type { MirrorRecord, Resource } from './record.js';
import { TABLES, type TableSpec } from './tables.js';

export interface PipedriveDestinationOptions {
  baseUrl: string;
  token: string;
  mapping?: PipedriveMappingOverrides;
  /** The config file the mapping came from, which its refusals name (else its variable). */
  mappingFile?: string;
}

/** Pipedrive ids of one mirrored record, kept in the ledger as `p<person>.d<deal>`. */
interface Ids {
  person?: number;
  deal?: number;
}
export function encodeIds(ids: Ids): string {
  return [ids.person && `p${ids.person}`, ids.deal && `d${ids.deal}`].filter(Boolean).join('.');
}
export function decodeIds(key: string | undefined): Ids {
  const person = /(?:^|\.)p(\d+)/.exec(key ?? '')?.[1];
  const deal = /(?:^|\.)d(\d+)/.exec(key ?? '')?.[1];
  return { ...(person ? { person: Number(person) } : {}), ...(deal ? { deal: Number(deal) } : {}) };
}

/**
 * A deal's title: Pipedrive requires one, and refuses an empty one (400) on every pass, so a
 * subject or title that is empty or only spaces names the deal as a missing one does.
 */
function titleOr(mapped: unknown, fallback: string): string {
  return typeof mapped === 'string' && mapped.trim() !== '' ? mapped : fallback;
}

// Pipedrive has no batch writes: a "batch" is records written one call at a time, this many
// at once (the rolling window still paces them to the plan's limit).
const BATCH = 100;
const PARALLEL = 8;
/** A Pipedrive person or deal a record was written to, and whether this call created it. */
interface Upserted {
  id: number;
  created: boolean;
}
/** Finds or creates the person, given the id remembered for the email if any. */
type MakePerson = (remembered: number | undefined) => Promise<Upserted>;
/**
 * A batch's find-or-create of each email's person, with the values it sent (see personOnce).
 */
type BatchPersons = Map<string, { found: Promise<Upserted>; sent: string }>;

/** Persons remembered by email (see rememberPerson): about 1 MB at most. */
const REMEMBERED_PERSONS = 10_000;

async function inParallel<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(PARALLEL, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i] as T);
    }
  });
  await Promise.all(lanes);
  return out;
}

interface Written {
  ids: Ids;
  created: boolean;
}

/** What the writes of `records` (and refusals) come to, as upsert answers it. */
function batchResult(
  records: readonly MirrorRecord[],
  written: ReadonlyMap<string, Written>,
  refused: ReadonlyMap<string, RefusalReason>,
): UpsertResult {
  let inserted = 0;
  // A record with no email address has no person (writeLead, writeEvent).
  let withoutEmail = 0;
  let writes = 0;
  for (const id of new Set(records.map((r) => r.id))) {
    const w = written.get(id);
    if (!w) continue;
    writes += 1;
    if (w.created) inserted += 1;
    if (w.ids.person === undefined) withoutEmail += 1;
  }
  const refusals = refusalsOf(records, refused, new Map());
  return {
    inserted,
    updated: writes - inserted,
    unchanged: 0,
    keys: records.map((r) => encodeIds(written.get(r.id)?.ids ?? {}) || r.id),
    ...(refusals.length > 0 ? { refused: refusals } : {}),
    ...(withoutEmail > 0 ? { withoutEmail } : {}),
  };
}

/**
 * Leads and events into a Pipedrive company (API v2). Pipedrive has no upsert, so each
 * record is found by the ids the ledger kept, else by search (email, or the deal's custom
 * field), then updated or created; bookings and appointments have no Pipedrive object.
 */
export class PipedriveDestination implements Destination {
  readonly capabilities: DestinationCapabilities = {
    maxBatchSize: BATCH,
    atomicBatches: false,
    countsChanges: true,
  };
  readonly mapping: PipedriveMapping;
  private readonly client: PipedriveClient;
  private keys: { lead: string; event: string } | undefined;
  /**
   * Find-or-create of a person, one at a time per email across every batch this destination
   * writes. Leads and events are written by concurrent activities, and a lead and an event
   * of the same customer both searched before either created: two persons for one email.
   */
  private readonly personTurns = new Map<string, Promise<unknown>>();
  /**
   * The person found or made for an email, most recent last: not left to a search to find
   * again, which may trail the writes that made it.
   */
  private readonly personIds = new Map<string, number>();

  constructor(private readonly options: PipedriveDestinationOptions) {
    this.mapping = pipedriveMapping(options.mapping, options.mappingFile);
    this.client = new PipedriveClient({ baseUrl: options.baseUrl, token: options.token });
  }

  describe(): DestinationDescription {
    return crmDescription('pipedrive', 'Pipedrive', this.options.baseUrl);
  }

  /** A CRM has no tables that could be removed under the ledger: nothing to make. */
  ensureTable(_resource: Resource): Promise<boolean> {
    return Promise.resolve(false);
  }

  /** Reads the hash keys of the ebs_lead_id / ebs_event_id deal fields (made by setup). */
  async ensureSchema(_tables: readonly TableSpec[]): Promise<SchemaChanges> {
    // Read again at each pass (a pass ensures the schema first): a worker kept the keys it
    // read first for its whole life, so fields made again in Pipedrive (setup run again after
    // they were deleted) failed every write ("Unknown custom field") until it was restarted.
    this.keys = undefined;
    await this.fieldKeys();
    return { createdTables: [], addedColumns: [] };
  }

  async upsert(resource: Resource, records: readonly MirrorRecord[]): Promise<UpsertResult> {
    if (!crmBatch('Pipedrive', BATCH, resource, records)) return passedOver(records);
    const keys = await this.fieldKeys();
    const latest = new Map(records.map((r) => [r.id, r]));
    // One person per email for the whole batch, even when several records share it.
    const persons: BatchPersons = new Map();
    const written = new Map<string, Written>();
    const refused = new Map<string, RefusalReason>();
    /** Each refusal's cause in Pipedrive's words, the call and ids left out (see below). */
    const causes = new Set<string>();
    /** Records Pipedrive itself refused (not those ebsync had nothing to write for). */
    let vendorRefused = 0;
    const list = [...latest.values()];
    /** The daily allowance ran out: records not started are left, those under way finish. */
    const pause = new UpsertPause();
    // A record Pipedrive refuses (400, 422) is reported and the others written: one value it
    // does not take failed the whole pass, on every pass, and no record after it was written.
    const results = await inParallel(list, (record) =>
      pause.unlessPaused(() =>
        (resource === 'leads'
          ? this.writeLead(record, keys.lead, persons)
          : this.writeEvent(record, keys.event, persons)
        ).catch((error: unknown): RefusalReason => {
          if (!(error instanceof PipedriveRefusedError)) throw error;
          vendorRefused += 1;
          causes.add(`${error.status} ${error.reason.replace(/\d+/g, '#')}`);
          return { code: `PIPEDRIVE_${error.status}`, message: error.message };
        }),
      ),
    );
    list.forEach((record, i) => {
      const result = results[i];
      if (result === undefined) return;
      if ('code' in result) refused.set(record.id, result);
      else written.set(record.id, result);
    });
    // What was written before the pause is said with it, for the ledger to record: the next
    // pass would otherwise look each record up again (by a search, which may trail the writes
    // that made it: a second deal) and count none of them in this one.
    pause.throwIfPaused(
      records,
      (r) => written.has(r.id) || refused.has(r.id),
      (part) => batchResult(part, written, refused),
    );
    if (vendorRefused > 0) {
      // The deal fields may have been made again in Pipedrive (new keys): read at the next
      // batch, not kept until the next pass's ensureSchema on whichever worker runs it.
      this.keys = undefined;
      // Every record refused the same way is no value of theirs but the batch's (a field or a
      // mapping Pipedrive does not take): the write fails with it, as it did before records
      // were refused one by one, rather than refusing every record of every pass. The same
      // way is Pipedrive's same words, whichever call met them (a POST for a new record, a
      // PATCH of another's known id).
      if (list.length > 1 && vendorRefused === list.length && causes.size === 1) {
        throw new DestinationWriteError(
          `Pipedrive refused each of ${list.length} ${resource} the same way: ${[...refused.values()][0]?.message ?? ''}`,
        );
      }
    }
    return batchResult(records, written, refused);
  }

  /** Deletes the deals of deleted leads and events (or keeps them, as the mapping says). */
  async markDeleted(resource: Resource, ids: readonly string[]): Promise<DeletionResult> {
    if (resource !== 'leads' && resource !== 'events') return { marked: 0 };
    if (this.mapping[resource].onDelete !== 'delete') return { marked: 0 };
    const keys = await this.fieldKeys();
    const key = resource === 'leads' ? keys.lead : keys.event;
    const found = await inParallel(ids, (id) => this.findDeal(key, id));
    let deleted = 0;
    for (const deal of found) {
      if (deal === undefined) continue;
      // https://developers.pipedrive.com/docs/api/v1/Deals#deleteDeal (v2) — marks the deal
      // deleted; Pipedrive removes it for good after 30 days. One deal a call: a refusal is
      // the call's failure (thrown), never a deal dropped unsaid.
      await this.client.data('DELETE', `/api/v2/deals/${deal}`);
      deleted += 1;
    }
    return { marked: deleted };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private async fieldKeys(): Promise<{ lead: string; event: string }> {
    if (!this.keys) {
      const found = await dealFieldKeys(this.client);
      const lead = found.get(PIPEDRIVE_LEAD_FIELD);
      const event = found.get(PIPEDRIVE_EVENT_FIELD);
      if (!lead || !event) {
        throw new DestinationSchemaError(
          `Pipedrive has no deal fields ${PIPEDRIVE_LEAD_FIELD} and ${PIPEDRIVE_EVENT_FIELD}: run 'ebsync destinations setup pipedrive' once`,
        );
      }
      this.keys = { lead, event };
    }
    return this.keys;
  }

  /** Standard fields and custom fields of a map, with values as Pipedrive takes them. */
  private values(
    table: 'leads' | 'events',
    map: Record<string, string>,
    record: MirrorRecord,
  ): { standard: Record<string, unknown>; custom: Record<string, string | null> } {
    const standard: Record<string, unknown> = {};
    const custom: Record<string, string | null> = {};
    for (const [field, column] of Object.entries(map)) {
      const value = record.attributes[column];
      const type = TABLES[table].columns.find((c) => c.name === column)?.type;
      if (/^[0-9a-f]{40}$/.test(field)) {
        custom[field] =
          value === undefined || value === null
            ? null
            : typeof value === 'object'
              ? JSON.stringify(value)
              : String(value);
        continue;
      }
      if (value === undefined || value === null) continue;
      if (field === 'value') {
        if (typeof value === 'number') standard.value = type === 'cents' ? value / 100 : value;
      } else if (field === 'expected_close_date') {
        if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)) {
          standard.expected_close_date = value.slice(0, 10);
        }
      } else if (field === 'phone') {
        if (typeof value === 'string' && value.trim()) {
          standard.phones = [{ value, primary: true, label: 'work' }];
        }
      } else if (typeof value === 'string' || typeof value === 'number') {
        standard[field] = String(value);
      }
    }
    return { standard, custom };
  }

  /** Updates the known person, else the one with this email, else creates one. */
  private async person(
    email: string,
    body: Record<string, unknown>,
    known: number | undefined,
  ): Promise<Upserted> {
    if (
      known !== undefined &&
      (await this.client.patchIfExists(`/api/v2/persons/${known}`, body))
    ) {
      return { id: known, created: false };
    }
    // https://developers.pipedrive.com/docs/api/v1/Persons#searchPersons (v2) — by email,
    // whole and case-insensitive with exact_match.
    const search = await this.client.data<{ items?: { item: { id: number } }[] }>(
      'GET',
      '/api/v2/persons/search',
      { searchParams: { term: email, fields: 'email', exact_match: 'true', limit: '1' } },
    );
    const existing = search.items?.[0]?.item.id;
    if (existing !== undefined) {
      await this.client.data('PATCH', `/api/v2/persons/${existing}`, { json: body });
      return { id: existing, created: false };
    }
    const made = await this.client.data<{ id: number }>('POST', '/api/v2/persons', {
      json: { name: email, ...body },
    });
    return { id: made.id, created: true };
  }

  /**
   * The deal whose custom field `key` holds `id`. Search matches any custom field, so each
   * hit is read back to check it is this field (a lead and an event may share an id).
   */
  private async findDeal(key: string, id: string): Promise<number | undefined> {
    // https://developers.pipedrive.com/docs/api/v1/Deals#searchDeals (v2) — custom fields of
    // text types are searchable; exact_match wants the whole value.
    const search = await this.client.data<{ items?: { item: { id: number } }[] }>(
      'GET',
      '/api/v2/deals/search',
      { searchParams: { term: id, fields: 'custom_fields', exact_match: 'true' } },
    );
    for (const { item } of search.items ?? []) {
      const deal = await this.client.data<{ custom_fields?: Record<string, unknown> }>(
        'GET',
        `/api/v2/deals/${item.id}`,
      );
      if (deal.custom_fields?.[key] === id) return item.id;
    }
    return undefined;
  }

  /** Updates the known deal, else the one found by its custom field, else creates one. */
  private async deal(
    key: string,
    id: string,
    body: Record<string, unknown>,
    known: number | undefined,
  ): Promise<Upserted> {
    if (known !== undefined && (await this.client.patchIfExists(`/api/v2/deals/${known}`, body))) {
      return { id: known, created: false };
    }
    const existing = await this.findDeal(key, id);
    if (existing !== undefined) {
      await this.client.data('PATCH', `/api/v2/deals/${existing}`, { json: body });
      return { id: existing, created: false };
    }
    const made = await this.client.data<{ id: number }>('POST', '/api/v2/deals', { json: body });
    return { id: made.id, created: true };
  }

  /**
   * The batch's person for this email: `make` runs once per batch, after any find-or-create
   * of the same email still running for another batch, and is given the person remembered
   * for the email (by this destination) when there is one.
   *
   * The person a record shares was written with the values (`sent`) of the record that came
   * first. When Pipedrive refused those values (a POST or PATCH answered 400 or 422: a phone
   * or a custom field value it does not take), a record with other values writes the person
   * with its own, and the records after it share that try: a bad value of one lead does not
   * refuse the leads of its customer that lack it. A refused search, or the same values, is
   * the record's refusal too, shared as before: trying again would only be refused again.
   */
  private personOnce(
    persons: BatchPersons,
    email: string,
    sent: string,
    make: MakePerson,
  ): Promise<Upserted> {
    const shared = persons.get(email);
    if (!shared) return this.personTurn(persons, email, sent, make);
    return shared.found.catch((error: unknown) => {
      const ownValues =
        error instanceof PipedriveRefusedError && error.sentValues && shared.sent !== sent;
      if (!ownValues) throw error;
      return persons.get(email) === shared
        ? this.personTurn(persons, email, sent, make)
        : this.personOnce(persons, email, sent, make);
    });
  }

  /** A find-or-create of the email's person in its turn, shared by the batch from now on. */
  private personTurn(
    persons: BatchPersons,
    email: string,
    sent: string,
    make: MakePerson,
  ): Promise<Upserted> {
    const before = this.personTurns.get(email) ?? Promise.resolve();
    const found = before
      .then(() => make(this.personIds.get(email)))
      .then((person) => {
        this.rememberPerson(email, person.id);
        return person;
      });
    // The next turn waits for this one, failed or not; the last one leaves no entry behind.
    const settled = found.then(
      () => undefined,
      () => undefined,
    );
    this.personTurns.set(email, settled);
    void settled.then(() => {
      if (this.personTurns.get(email) === settled) this.personTurns.delete(email);
    });
    persons.set(email, { found, sent });
    return found;
  }

  private rememberPerson(email: string, id: number): void {
    this.personIds.delete(email);
    this.personIds.set(email, id);
    if (this.personIds.size > REMEMBERED_PERSONS) {
      const oldest = this.personIds.keys().next();
      if (!oldest.done) this.personIds.delete(oldest.value);
    }
  }

  private async writeLead(
    lead: MirrorRecord,
    key: string,
    persons: BatchPersons,
  ): Promise<Written | RefusalReason> {
    const m = this.mapping.leads;
    const known = decodeIds(lead.destinationKey);
    const [email] = emailsIn(lead.attributes.email);
    let person: Upserted | undefined;
    if (email) {
      const { standard, custom } = this.values('leads', m.person, lead);
      const named = [lead.attributes.first_name, lead.attributes.last_name]
        .filter((part): part is string => typeof part === 'string' && part.trim() !== '')
        .join(' ');
      const body = {
        name: named || email,
        ...standard,
        emails: [{ value: email, primary: true, label: 'work' }],
        ...(Object.keys(custom).length > 0 ? { custom_fields: custom } : {}),
      };
      person = await this.personOnce(persons, email, JSON.stringify(body), (remembered) =>
        this.person(email, body, known.person ?? remembered),
      );
    }
    if (!m.createDeal) {
      // Nothing at all would be written for this lead: refused, so that the pass says which
      // and ends incomplete, rather than counting as written a record Pipedrive never saw.
      if (!person) return this.nothingToWrite();
      return {
        ids: person ? { person: person.id } : {},
        created: person?.created ?? false,
      };
    }
    const { standard, custom } = this.values('leads', m.deal, lead);
    const deal = await this.deal(
      key,
      lead.id,
      {
        ...standard,
        title: titleOr(standard.title, `Lead ${lead.id}`),
        currency: this.mapping.currency,
        status: 'open',
        person_id: person?.id ?? null,
        custom_fields: { ...custom, [key]: lead.id },
      },
      known.deal,
    );
    return {
      ids: { ...(person ? { person: person.id } : {}), deal: deal.id },
      created: deal.created,
    };
  }

  /** Why a lead without an email address is refused when leads make no deal. */
  private nothingToWrite(): RefusalReason {
    const entry = mappingEntry(
      mappingSource('pipedrive', this.options.mappingFile),
      'leads.createDeal',
    );
    return {
      code: 'NOTHING_TO_WRITE',
      message: `no email address, and ${entry} is false: such a lead is only a Pipedrive person, which needs one; give the lead an email or set createDeal to true`,
    };
  }

  private async writeEvent(
    event: MirrorRecord,
    key: string,
    persons: BatchPersons,
  ): Promise<Written> {
    const m = this.mapping.events;
    const known = decodeIds(event.destinationKey);
    const [email] = emailsIn(event.attributes.customer_emails);
    // A customer is found by email, or made with the email only: what a lead wrote stays.
    const person = email
      ? // Every event's customer is sent the same (the email): nothing of its own to try.
        await this.personOnce(persons, email, '', (remembered) =>
          this.customer(email, known.person ?? remembered),
        )
      : undefined;
    const { standard, custom } = this.values('events', m.deal, event);
    const status = eventStageKey(event.attributes);
    const deal = await this.deal(
      key,
      event.id,
      {
        ...standard,
        title: titleOr(standard.title, `Event ${event.id}`),
        currency: this.mapping.currency,
        status: m.status[status] ?? m.status['*'] ?? 'open',
        person_id: person?.id ?? null,
        custom_fields: { ...custom, [key]: event.id },
      },
      known.deal,
    );
    return {
      ids: { ...(person ? { person: person.id } : {}), deal: deal.id },
      created: deal.created,
    };
  }

  /**
   * The event's customer: the person known for it while Pipedrive still has them, else the one
   * with this email, else a new one. A person deleted or merged away in Pipedrive (merging
   * duplicates is what crm.md advises) was linked as known, and Pipedrive refused the deal
   * ("Person N not found", 400) on every pass after.
   */
  private async customer(email: string, known: number | undefined): Promise<Upserted> {
    if (known !== undefined && (await this.client.exists(`/api/v2/persons/${known}`))) {
      return { id: known, created: false };
    }
    const search = await this.client.data<{ items?: { item: { id: number } }[] }>(
      'GET',
      '/api/v2/persons/search',
      { searchParams: { term: email, fields: 'email', exact_match: 'true', limit: '1' } },
    );
    const existing = search.items?.[0]?.item.id;
    if (existing !== undefined) return { id: existing, created: false };
    const made = await this.client.data<{ id: number }>('POST', '/api/v2/persons', {
      json: { name: email, emails: [{ value: email, primary: true, label: 'work' }] },
    });
    return { id: made.id, created: true };
  }
}

export function openPipedriveDestination(
  options: PipedriveDestinationOptions,
): PipedriveDestination {
  return new PipedriveDestination(options);
}
