import type { HubSpotMappingOverrides } from '../config/hubspot-mapping.js';
import type {
  Destination,
  DestinationCapabilities,
  DestinationDescription,
  SchemaChanges,
  UpsertResult,
} from './destination.js';
import { chunks, crmBatch, crmDescription, emailsIn, passedOver } from './crm-fields.js';
import { DestinationRecordError, DestinationSchemaError } from './errors.js';
import { HubSpotClient } from './hubspot-client.js';
import { EVENT_KEY, LEAD_KEY, hubspotMapping, type HubSpotMapping } from './hubspot-mapping.js';
import type { JsonValue, MirrorRecord, Resource } from './record.js';
import { TABLES, type TableSpec } from './tables.js';

export interface HubSpotDestinationOptions {
  baseUrl: string;
  token: string;
  mapping?: HubSpotMappingOverrides;
}

interface BatchResult {
  id: string;
  new?: boolean;
  properties?: Record<string, string | null>;
}
interface BatchAnswer {
  results?: BatchResult[];
  errors?: { message?: string; category?: string }[];
}

// https://developers.hubspot.com/docs/api/crm/understanding-the-crm — 100 inputs per batch.
const BATCH = 100;

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
    this.mapping = hubspotMapping(options.mapping);
    this.client = new HubSpotClient({ baseUrl: options.baseUrl, token: options.token });
  }

  describe(): DestinationDescription {
    return crmDescription('hubspot', 'HubSpot', this.options.baseUrl);
  }

  /**
   * HubSpot's schema is the portal's: ebsync only checks that the unique deal properties its
   * upserts match on exist (made once by `ebsync destinations setup hubspot`).
   */
  async ensureSchema(_tables: readonly TableSpec[]): Promise<SchemaChanges> {
    if (!this.schemaChecked) {
      for (const name of [LEAD_KEY, EVENT_KEY]) {
        const answer = await this.client.call('GET', `/crm/v3/properties/deals/${name}`);
        const unique = (answer.body as { hasUniqueValue?: unknown } | null)?.hasUniqueValue;
        if (answer.status !== 200 || unique !== true) {
          throw new DestinationSchemaError(
            `HubSpot has no unique-value deal property ${name}: run 'ebsync destinations setup hubspot' once`,
          );
        }
      }
      this.schemaChecked = true;
    }
    return { createdTables: [], addedColumns: [] };
  }

  async upsert(resource: Resource, records: readonly MirrorRecord[]): Promise<UpsertResult> {
    const table = crmBatch('HubSpot', BATCH, resource, records);
    if (!table) return passedOver(records);
    const latest = [...new Map(records.map((r) => [r.id, r])).values()];
    return this.order(
      records,
      table === 'leads' ? await this.upsertLeads(latest) : await this.upsertEvents(latest),
    );
  }

  /** Archives the deals of deleted leads and events (or keeps them, as the mapping says). */
  async markDeleted(resource: Resource, ids: readonly string[]): Promise<number> {
    const key = resource === 'leads' ? LEAD_KEY : resource === 'events' ? EVENT_KEY : undefined;
    if (!key || this.mapping[resource as 'leads' | 'events'].onDelete !== 'archive') return 0;
    let archived = 0;
    for (const part of chunks(ids, BATCH)) {
      // https://developers.hubspot.com/docs/api/crm/deals — read by a unique property, then
      // archive by HubSpot id.
      const read = await this.client.ok('POST', '/crm/v3/objects/deals/batch/read', {
        idProperty: key,
        properties: [key],
        inputs: part.map((id) => ({ id })),
      });
      const found = (read.body as BatchAnswer).results ?? [];
      if (found.length === 0) continue;
      await this.client.ok('POST', '/crm/v3/objects/deals/batch/archive', {
        inputs: found.map((r) => ({ id: r.id })),
      });
      archived += found.length;
    }
    return archived;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Upserts by a unique property; item errors (207) are reported as one record error. */
  private async batchUpsert(
    type: 'contacts' | 'deals',
    idProperty: string,
    inputs: { id: string; properties: Record<string, string> }[],
  ): Promise<Map<string, BatchResult>> {
    const byKey = new Map<string, BatchResult>();
    if (inputs.length === 0) return byKey;
    // https://developers.hubspot.com/docs/api/crm/contacts — batch upsert by idProperty.
    const answer = await this.client.ok('POST', `/crm/v3/objects/${type}/batch/upsert`, {
      inputs: inputs.map((i) => ({ ...i, idProperty })),
    });
    const body = answer.body as BatchAnswer;
    for (const result of body.results ?? []) {
      const key = result.properties?.[idProperty];
      if (typeof key === 'string')
        byKey.set(idProperty === 'email' ? key.toLowerCase() : key, result);
    }
    const errors = body.errors ?? [];
    if (errors.length > 0 && type === 'deals') {
      throw new DestinationRecordError(
        `HubSpot refused ${errors.length} of ${inputs.length} deals: ${errors
          .slice(0, 3)
          .map((e) => e.message ?? e.category ?? 'error')
          .join('; ')}`,
      );
    }
    // A contact HubSpot refuses (an address it deems invalid) leaves its deal unlinked.
    return byKey;
  }

  private async contactsFor(
    emails: Iterable<string>,
    values: Map<string, Record<string, string>> = new Map(),
  ): Promise<Map<string, BatchResult>> {
    const inputs = [...new Set(emails)].map((email) => ({
      id: email,
      properties: values.get(email) ?? {},
    }));
    const all = new Map<string, BatchResult>();
    for (const part of chunks(inputs, BATCH)) {
      for (const [k, v] of await this.batchUpsert('contacts', 'email', part)) all.set(k, v);
    }
    return all;
  }

  private async associate(pairs: { deal: string; contact: string }[]): Promise<void> {
    // https://developers.hubspot.com/docs/api/crm/associations — v4 default associations.
    for (const part of chunks(pairs, BATCH)) {
      await this.client.ok('POST', '/crm/v4/associations/deals/contacts/batch/associate/default', {
        inputs: part.map((p) => ({ from: { id: p.deal }, to: { id: p.contact } })),
      });
    }
  }

  private async upsertLeads(leads: MirrorRecord[]): Promise<Map<string, BatchResult>> {
    const m = this.mapping.leads;
    const contactValues = new Map<string, Record<string, string>>();
    const emailOf = new Map<string, string>();
    for (const lead of leads) {
      const [email] = emailsIn(lead.attributes.email);
      if (!email) continue;
      emailOf.set(lead.id, email);
      contactValues.set(email, { ...properties('leads', m.contact, lead), email });
    }
    const contacts = await this.contactsFor(contactValues.keys(), contactValues);
    const deals = await this.batchUpsert(
      'deals',
      LEAD_KEY,
      leads.map((lead) => {
        const values = properties('leads', m.deal, lead);
        if (!values.dealname) values.dealname = `Lead ${lead.id}`;
        return {
          id: lead.id,
          properties: { ...values, pipeline: this.mapping.pipeline, dealstage: m.dealStage },
        };
      }),
    );
    const pairs = leads.flatMap((lead) => {
      const deal = deals.get(lead.id);
      const contact = contacts.get(emailOf.get(lead.id) ?? '');
      return deal && contact ? [{ deal: deal.id, contact: contact.id }] : [];
    });
    await this.associate(pairs);
    return deals;
  }

  private async upsertEvents(events: MirrorRecord[]): Promise<Map<string, BatchResult>> {
    const m = this.mapping.events;
    const deals = await this.batchUpsert(
      'deals',
      EVENT_KEY,
      events.map((event) => {
        const values = properties('events', m.deal, event);
        if (!values.dealname) values.dealname = `Event ${event.id}`;
        const status = typeof event.attributes.status === 'string' ? event.attributes.status : '';
        const stage = m.stages[status] ?? m.stages['*'] ?? 'contractsent';
        return {
          id: event.id,
          properties: { ...values, pipeline: this.mapping.pipeline, dealstage: stage },
        };
      }),
    );
    const emailsOf = new Map(events.map((e) => [e.id, emailsIn(e.attributes.customer_emails)]));
    // Customers are upserted with their email only: what a lead wrote stays as it is.
    const contacts = await this.contactsFor([...emailsOf.values()].flat());
    const pairs = events.flatMap((event) => {
      const deal = deals.get(event.id);
      if (!deal) return [];
      return (emailsOf.get(event.id) ?? []).flatMap((email) => {
        const contact = contacts.get(email);
        return contact ? [{ deal: deal.id, contact: contact.id }] : [];
      });
    });
    await this.associate(pairs);
    return deals;
  }

  /** Counts and keys (HubSpot deal ids) in the order of the records given. */
  private order(records: readonly MirrorRecord[], deals: Map<string, BatchResult>): UpsertResult {
    let inserted = 0;
    let updated = 0;
    const keys = records.map((r) => deals.get(r.id)?.id ?? r.id);
    for (const result of deals.values()) {
      if (result.new) inserted += 1;
      else updated += 1;
    }
    return { inserted, updated, unchanged: 0, keys };
  }
}

export function openHubSpotDestination(options: HubSpotDestinationOptions): HubSpotDestination {
  return new HubSpotDestination(options);
}
