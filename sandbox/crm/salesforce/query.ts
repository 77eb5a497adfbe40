import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { SOBJECTS, type SObjectName, type SObjectRecord, type SalesforceState } from './state.js';

/**
 * The REST query resource, for the SOQL ebsync sends: `SELECT fields FROM object` with an
 * optional `WHERE field IN ('a', 'b')`. Fields are the object's own or one parent field through
 * a lookup (`Contact.Email` for `ContactId`). Anything else is refused as Salesforce refuses a
 * query it cannot parse (MALFORMED_QUERY), never answered with a guess.
 */

const SELECT =
  /^\s*SELECT\s+(.+?)\s+FROM\s+(\w+)(?:\s+WHERE\s+(\w+)\s+IN\s*\(\s*((?:'[^'\\]*'\s*,\s*)*'[^'\\]*')\s*\))?\s*$/i;

interface Parsed {
  type: SObjectName;
  fields: string[];
  where?: { field: string; values: Set<string> };
}

type QueryError = {
  errorCode: 'MALFORMED_QUERY' | 'INVALID_FIELD' | 'INVALID_TYPE';
  message: string;
};

function parse(state: SalesforceState, soql: string): Parsed | QueryError {
  const m = SELECT.exec(soql);
  if (!m) return { errorCode: 'MALFORMED_QUERY', message: 'unexpected token in the query' };
  const [, list = '', object = '', whereField, values] = m;
  const type = SOBJECTS.find((t) => t === object);
  if (!type)
    return { errorCode: 'INVALID_TYPE', message: `sObject type '${object}' is not supported` };
  const fields = list.split(',').map((f) => f.trim());
  for (const field of [...fields, ...(whereField ? [whereField] : [])]) {
    if (!known(state, type, field)) {
      return {
        errorCode: 'INVALID_FIELD',
        message: `No such column '${field}' on entity '${type}'`,
      };
    }
  }
  return {
    type,
    fields,
    ...(whereField && values
      ? {
          where: {
            field: whereField,
            values: new Set([...values.matchAll(/'([^']*)'/g)].map((v) => v[1] ?? '')),
          },
        }
      : {}),
  };
}

/** The object a lookup field's relationship (`Contact` of `ContactId`) points at. */
const parentOf = (relationship: string): SObjectName | undefined =>
  SOBJECTS.find((t) => t === relationship);

function known(state: SalesforceState, type: SObjectName, field: string): boolean {
  const [own, parentField, ...more] = field.split('.');
  if (more.length > 0 || !own) return false;
  if (parentField === undefined) return state.fields[type].has(own);
  const parent = parentOf(own);
  return (
    parent !== undefined &&
    state.fields[type].get(`${own}Id`)?.type === 'reference' &&
    state.fields[parent].has(parentField)
  );
}

const valueOf = (r: SObjectRecord, name: string): unknown =>
  name === 'Id' ? r.Id : (r.fields[name] ?? null);

export function registerSalesforceQuery(app: FastifyInstance, state: SalesforceState): void {
  /** Records left of a query after the batches answered, by the locator of their next one. */
  const left = new Map<string, { rest: Record<string, unknown>[]; totalSize: number }>();
  let nextLocator = 1;

  const view = (version: string, r: SObjectRecord) => ({
    type: r.type,
    url: `/services/data/${version}/sobjects/${r.type}/${r.Id}`,
  });

  /** A batch from `records`, the query's from `offset` on; the locator names the next offset. */
  const batch = (
    version: string,
    records: Record<string, unknown>[],
    totalSize: number,
    offset = 0,
  ) => {
    const size = state.queryBatchSize;
    const rest = records.slice(size);
    if (rest.length === 0) return { totalSize, done: true, records };
    const locator = `01gDn00000${String(nextLocator++).padStart(8, '0')}-${offset + size}`;
    left.set(locator, { rest, totalSize });
    return {
      totalSize,
      done: false,
      nextRecordsUrl: `/services/data/${version}/query/${locator}`,
      records: records.slice(0, size),
    };
  };

  const refuse = (reply: FastifyReply, error: QueryError) =>
    reply.code(400).send([{ message: error.message, errorCode: error.errorCode }]);

  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_query.htm
  // — GET …/query?q=SOQL: {totalSize, done, records[, nextRecordsUrl]}, each record with its
  // attributes (type, url) and the fields asked; a parent's fields as an object (or null).
  // Records in the Recycle Bin are left out (that is queryAll).
  app.get('/services/data/:version/query', (request, reply) => {
    const { version } = request.params as { version: string };
    const q = z.object({ q: z.string().min(1) }).safeParse(request.query);
    if (!q.success)
      return refuse(reply, { errorCode: 'MALFORMED_QUERY', message: 'q not specified' });
    const parsed = parse(state, q.data.q);
    if ('errorCode' in parsed) return refuse(reply, parsed);
    const where = parsed.where;
    const found = state
      .live(parsed.type)
      .filter((r) => !where || where.values.has(String(valueOf(r, where.field))));
    const records = found.map((r) => {
      const out: Record<string, unknown> = { attributes: view(version, r) };
      for (const field of parsed.fields) {
        const [own = '', parentField] = field.split('.');
        if (parentField === undefined) {
          out[own] = valueOf(r, own);
          continue;
        }
        const parentType = parentOf(own);
        const parent = parentType
          ? state.records[parentType].get(String(r.fields[`${own}Id`]))
          : undefined;
        if (!parent || parent.IsDeleted) {
          out[own] = null;
          continue;
        }
        const nested = (out[own] ?? { attributes: view(version, parent) }) as Record<
          string,
          unknown
        >;
        nested[parentField] = valueOf(parent, parentField);
        out[own] = nested;
      }
      return out;
    });
    return batch(version, records, records.length);
  });

  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm —
  // the next batch of a query, by the locator its nextRecordsUrl named.
  app.get('/services/data/:version/query/:locator', (request, reply) => {
    const { version, locator } = request.params as { version: string; locator: string };
    const next = left.get(locator);
    if (!next) {
      return reply
        .code(400)
        .send([{ message: 'invalid query locator', errorCode: 'INVALID_QUERY_LOCATOR' }]);
    }
    left.delete(locator);
    return batch(version, next.rest, next.totalSize, Number(locator.split('-')[1] ?? 0));
  });
}
