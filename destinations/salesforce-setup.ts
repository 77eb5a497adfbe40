import { SalesforceClient, type SalesforceClientOptions } from './salesforce-client.js';
import { mappingSetting, mappingSource } from './crm-fields.js';
import { SALESFORCE_KEYS, type SalesforceMapping } from './salesforce-mapping.js';
import { DestinationSchemaError } from './errors.js';
import type { ColumnType } from './record.js';
import { TABLES } from './tables.js';

/** A field as ebsync writes it: its Salesforce type, and the most characters text takes. */
export interface FieldShape {
  type: string;
  /** 0 when the field is not text (or Salesforce gives no length). */
  length: number;
}

/** Field API name → its shape, per object ebsync writes. */
export type ObjectFields = Record<'Lead' | 'Opportunity' | 'Contact', Map<string, FieldShape>>;

interface Described {
  fields?: { name: string; type: string; length?: number; externalId?: boolean }[];
}

/**
 * https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_sobject_describe.htm
 * — each object's fields with their types; an external id is a field with externalId true
 * (only those are kept as `key` here when they are ebsync's keys).
 */
export async function describeObjects(client: SalesforceClient): Promise<ObjectFields> {
  const out = {} as ObjectFields;
  for (const sobject of ['Lead', 'Opportunity', 'Contact'] as const) {
    const answer = await client.ok('GET', `/sobjects/${sobject}/describe`);
    const described = (answer.body ?? {}) as Described;
    const key = SALESFORCE_KEYS[sobject];
    out[sobject] = new Map(
      (described.fields ?? [])
        // A field named like the key but not an external id cannot be upserted by.
        .filter((f) => f.name !== key || f.externalId === true)
        .map((f) => [f.name, { type: f.type, length: f.length ?? 0 }]),
    );
  }
  return out;
}

/** `Object.Field` of each key or mapped field the org lacks. */
export function missingFields(fields: ObjectFields, mapping: SalesforceMapping): string[] {
  const wanted: [keyof ObjectFields, string][] = [
    ...Object.entries(SALESFORCE_KEYS).map(
      ([o, f]) => [o as keyof ObjectFields, f] as [keyof ObjectFields, string],
    ),
    ...Object.keys(mapping.leads.lead).map((f) => ['Lead', f] as [keyof ObjectFields, string]),
    ...Object.keys(mapping.events.opportunity).map(
      (f) => ['Opportunity', f] as [keyof ObjectFields, string],
    ),
  ];
  return wanted.filter(([o, f]) => !fields[o].has(f)).map(([o, f]) => `${o}.${f}`);
}

/** The column types a mapped field of each Salesforce type takes (any, for text fields). */
const COLUMNS_FOR: Record<string, readonly ColumnType[]> = {
  currency: ['cents', 'number', 'integer'],
  double: ['cents', 'number', 'integer'],
  int: ['cents', 'number', 'integer'],
  percent: ['cents', 'number', 'integer'],
  date: ['date', 'timestamp'],
  boolean: ['boolean'],
};

/**
 * The mapped fields whose column could never be written to them (a text column into a
 * currency or date field would be written as null on every record, silently), as
 * `Object.Field (type) ← column (type)`.
 */
export function unsuitedFields(fields: ObjectFields, mapping: SalesforceMapping): string[] {
  const places = [
    ['Lead', 'leads', mapping.leads.lead],
    ['Opportunity', 'events', mapping.events.opportunity],
  ] as const;
  const out: string[] = [];
  for (const [sobject, table, map] of places) {
    for (const [field, column] of Object.entries(map)) {
      const type = fields[sobject].get(field)?.type ?? '';
      const takes = COLUMNS_FOR[type];
      const columnType = TABLES[table].columns.find((c) => c.name === column)?.type;
      if (takes && columnType && !takes.includes(columnType)) {
        out.push(`${sobject}.${field} (${type}) ← ${column} (${columnType})`);
      }
    }
  }
  return out;
}

/** Why the mapping cannot be written to the org's fields, or undefined when it can. */
export function unsuitedMapping(
  fields: ObjectFields,
  mapping: SalesforceMapping,
  mappingFile?: string,
): string | undefined {
  const unsuited = unsuitedFields(fields, mapping);
  if (unsuited.length === 0) return undefined;
  return `${mappingSetting(mappingSource('salesforce', mappingFile))} maps a column of another kind to a Salesforce field: ${unsuited.join(', ')}; a currency, number or percent field takes a money or number column, a date field a date or time, a checkbox a boolean (docs/mirror.md, Tables)`;
}

export interface SalesforceSetupLine {
  field: string;
  type: string;
}

/**
 * Checks the org is ready: custom fields cannot be made over REST without the Metadata API
 * (and field-level security), so an admin creates them (docs/crm.md) and this verifies
 * them, with the mapping's fields too. Throws naming what is missing.
 */
export async function checkSalesforce(
  options: SalesforceClientOptions,
  mapping: SalesforceMapping,
  /** The config file the mapping came from, if it did: refusals name it. */
  mappingFile?: string,
): Promise<SalesforceSetupLine[]> {
  const client = new SalesforceClient(options);
  const fields = await describeObjects(client);
  const missing = missingFields(fields, mapping);
  if (missing.length > 0) {
    throw new DestinationSchemaError(
      `Salesforce has no field ${missing.join(', ')}: create ${missing.length > 1 ? 'them' : 'it'} as docs/crm.md says (external ids: Text, External ID, Unique), or change ${mappingSetting(mappingSource('salesforce', mappingFile))}`,
    );
  }
  const unsuited = unsuitedMapping(fields, mapping, mappingFile);
  if (unsuited) throw new DestinationSchemaError(unsuited);
  return Object.entries(SALESFORCE_KEYS).map(([o, f]) => ({
    field: `${o}.${f}`,
    type: fields[o as keyof ObjectFields].get(f)?.type ?? '',
  }));
}
