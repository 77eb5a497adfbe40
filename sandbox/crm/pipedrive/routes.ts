import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { countAndFault } from '../admin.js';
import {
  PIPEDRIVE_ENTITIES,
  type PipedriveEntity,
  type PipedriveRecord,
  type PipedriveState,
} from './state.js';

/**
 * The Pipedrive routes ebsync uses, as Pipedrive documents them: API v2 persons and deals
 * (search, create, update, get, delete) and the v1 field lists. Every answer keeps
 * Pipedrive's envelope `{success, data, additional_data}`; errors are
 * `{success:false, error, error_info}`.
 */

// https://pipedrive.readme.io/docs/core-api-concepts-responses — the error envelope.
function pipedriveError(reply: FastifyReply, status: number, error: string): FastifyReply {
  return reply.code(status).send({
    success: false,
    error,
    error_info: 'Please check developers.pipedrive.com for more information about Pipedrive API.',
    data: null,
    additional_data: null,
  });
}
const ok = (data: unknown, additional: unknown = null) => ({
  success: true,
  data,
  additional_data: additional,
});

const entityParam = z.object({ entity: z.enum(PIPEDRIVE_ENTITIES) });
const idParams = entityParam.extend({ id: z.coerce.number().int().positive() });
const customFields = z.record(
  z.string().regex(/^[0-9a-f]{40}$/),
  z.union([z.string(), z.number(), z.null()]),
);
const contactPoints = z.array(
  z.object({
    value: z.string(),
    primary: z.boolean().optional(),
    label: z.string().optional(),
  }),
);
// https://developers.pipedrive.com/docs/api/v1/Persons#addPerson (v2) — `name` is required;
// emails and phones are lists of {value, primary, label}; custom fields go in custom_fields.
const personBody = z.strictObject({
  name: z.string().min(1),
  emails: contactPoints.optional(),
  phones: contactPoints.optional(),
  custom_fields: customFields.optional(),
});
// https://developers.pipedrive.com/docs/api/v1/Deals#addDeal (v2) — `title` is required; the
// status is open, won or lost; person_id links the deal's person.
const dealBody = z.strictObject({
  title: z.string().min(1),
  value: z.number().nonnegative().optional(),
  currency: z.string().length(3).optional(),
  person_id: z.number().int().positive().nullable().optional(),
  status: z.enum(['open', 'won', 'lost']).optional(),
  expected_close_date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/)
    .nullable()
    .optional(),
  custom_fields: customFields.optional(),
});
const searchQuery = z.object({
  term: z.string().min(1),
  fields: z.string().optional(),
  exact_match: z.enum(['true', 'false']).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});
// https://developers.pipedrive.com/docs/api/v1/DealFields#addDealField — name and field_type.
const fieldBody = z.object({
  name: z.string().min(1),
  field_type: z.enum(['varchar', 'text', 'double', 'monetary', 'date', 'phone']),
});

const textOf = (value: unknown): string => (typeof value === 'string' ? value : '');

function view(entity: PipedriveEntity, record: PipedriveRecord) {
  return {
    id: record.id,
    ...record.fields,
    custom_fields: record.custom_fields,
    add_time: record.add_time,
    update_time: record.update_time,
    ...(entity === 'deals' ? { is_deleted: record.is_deleted } : {}),
  };
}

export function registerPipedriveRoutes(app: FastifyInstance, state: PipedriveState): void {
  const nowIso = (): string => new Date(state.now()).toISOString().replace(/\.\d+Z$/, 'Z');

  // https://pipedrive.readme.io/docs/core-api-concepts-authentication — an API token may be
  // sent in the x-api-token header.
  // https://pipedrive.readme.io/docs/core-api-concepts-rate-limiting — every answer carries
  // x-ratelimit-limit, -remaining, -reset and x-daily-requests-left; over the limit, 429.
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const fault = countAndFault(state, request);
    if (fault !== undefined) return pipedriveError(reply, fault, 'injected fault');
    if (request.headers['x-api-token'] !== state.token) {
      return pipedriveError(reply, 401, 'unauthorized access');
    }
    const isWrite = ['POST', 'PUT', 'PATCH'].includes(request.method);
    const { refused, headers } = state.admit(isWrite);
    void reply.headers(headers);
    if (refused) {
      state.countRateLimited(refused);
      return pipedriveError(
        reply,
        429,
        refused === 'daily'
          ? 'Daily POST/PUT request limit exceeded'
          : 'Request over limit. Please try again later.',
      );
    }
    return undefined;
  });

  const bad = (reply: FastifyReply, error: z.ZodError) =>
    pipedriveError(
      reply,
      400,
      error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
    );

  const unknownFields = (entity: PipedriveEntity, values: Record<string, unknown> | undefined) =>
    Object.keys(values ?? {}).filter((key) => !state.fields[entity].has(key));

  const text = (value: string | number | null): string | null =>
    value === null ? null : String(value);

  const emailsOf = (record: PipedriveRecord): string[] =>
    ((record.fields.emails as { value: string }[] | undefined) ?? []).map((e) =>
      e.value.toLowerCase(),
    );

  // https://developers.pipedrive.com/docs/api/v1/Persons#searchPersons (v2) — search by
  // email, name or custom fields; exact_match asks for whole, case-insensitive matches.
  // Custom-field search covers text-like fields. The searched deal/person comes back as
  // `{result_score, item}` in data.items.
  app.get('/api/v2/:entity/search', (request, reply) => {
    const params = entityParam.safeParse(request.params);
    if (!params.success) return pipedriveError(reply, 404, 'Unknown entity');
    const query = searchQuery.safeParse(request.query);
    if (!query.success) return bad(reply, query.error);
    const entity = params.data.entity;
    const exact = query.data.exact_match === 'true';
    if (!exact && query.data.term.length < 2) {
      return pipedriveError(reply, 400, 'term: minimum 2 characters (or 1 with exact_match)');
    }
    state.counters.searches += 1;
    const term = query.data.term.toLowerCase();
    const matches = (value: string): boolean =>
      exact ? value.toLowerCase() === term : value.toLowerCase().includes(term);
    const fields = (query.data.fields ?? 'custom_fields,email,name,title').split(',');
    const items = [];
    for (const record of state.live(entity)) {
      const hit =
        (fields.includes('email') && emailsOf(record).some(matches)) ||
        (fields.includes('name') && matches(textOf(record.fields.name))) ||
        (fields.includes('title') && matches(textOf(record.fields.title))) ||
        (fields.includes('custom_fields') &&
          Object.values(record.custom_fields).some((v) => v !== null && matches(v)));
      if (!hit) continue;
      items.push({
        result_score: 1,
        item: {
          id: record.id,
          type: entity === 'persons' ? 'person' : 'deal',
          ...(entity === 'persons'
            ? { name: record.fields.name, emails: emailsOf(record) }
            : { title: record.fields.title, status: record.fields.status }),
          custom_fields: Object.values(record.custom_fields).filter((v) => v !== null),
        },
      });
      if (items.length >= (query.data.limit ?? 100)) break;
    }
    return ok({ items }, { next_cursor: null });
  });

  app.post('/api/v2/:entity', (request, reply) => {
    const params = entityParam.safeParse(request.params);
    if (!params.success) return pipedriveError(reply, 404, 'Unknown entity');
    const entity = params.data.entity;
    const body = (entity === 'persons' ? personBody : dealBody).safeParse(request.body);
    if (!body.success) return bad(reply, body.error);
    const { custom_fields: custom, ...fields } = body.data as Record<string, unknown> & {
      custom_fields?: Record<string, string | number | null>;
    };
    const unknown = unknownFields(entity, custom);
    if (unknown.length > 0) return pipedriveError(reply, 400, `Unknown custom field ${unknown[0]}`);
    if (entity === 'deals' && typeof fields.person_id === 'number') {
      const person = state.records.persons.get(fields.person_id);
      if (!person || person.is_deleted) {
        return pipedriveError(reply, 400, `Person ${fields.person_id} not found`);
      }
    }
    state.counters.writes += 1;
    const at = nowIso();
    const record: PipedriveRecord = {
      id: state.newId(),
      fields: entity === 'deals' ? { status: 'open', currency: 'USD', ...fields } : fields,
      custom_fields: Object.fromEntries(Object.entries(custom ?? {}).map(([k, v]) => [k, text(v)])),
      add_time: at,
      update_time: at,
      is_deleted: false,
    };
    state.records[entity].set(record.id, record);
    state.counters.created[entity] += 1;
    return reply.code(200).send(ok(view(entity, record)));
  });

  const found = (entity: PipedriveEntity, id: number): PipedriveRecord | undefined => {
    const record = state.records[entity].get(id);
    return record && !record.is_deleted ? record : undefined;
  };

  app.get('/api/v2/:entity/:id', (request, reply) => {
    const params = idParams.safeParse(request.params);
    if (!params.success) return pipedriveError(reply, 404, 'Not found');
    const record = found(params.data.entity, params.data.id);
    if (!record) return pipedriveError(reply, 404, `${params.data.entity.slice(0, -1)} not found`);
    return ok(view(params.data.entity, record));
  });

  // https://developers.pipedrive.com/docs/api/v1/Persons#updatePerson (v2) — PATCH updates
  // only the fields sent; an unknown or deleted id answers 404.
  app.patch('/api/v2/:entity/:id', (request, reply) => {
    const params = idParams.safeParse(request.params);
    if (!params.success) return pipedriveError(reply, 404, 'Not found');
    const entity = params.data.entity;
    const record = found(entity, params.data.id);
    if (!record) return pipedriveError(reply, 404, `${entity.slice(0, -1)} not found`);
    const body = (entity === 'persons' ? personBody : dealBody).partial().safeParse(request.body);
    if (!body.success) return bad(reply, body.error);
    const { custom_fields: custom, ...fields } = body.data as Record<string, unknown> & {
      custom_fields?: Record<string, string | number | null>;
    };
    const unknown = unknownFields(entity, custom);
    if (unknown.length > 0) return pipedriveError(reply, 400, `Unknown custom field ${unknown[0]}`);
    state.counters.writes += 1;
    let changed = false;
    for (const [name, value] of Object.entries(fields)) {
      if (JSON.stringify(record.fields[name]) !== JSON.stringify(value)) changed = true;
      record.fields[name] = value;
    }
    for (const [key, value] of Object.entries(custom ?? {})) {
      if ((record.custom_fields[key] ?? null) !== text(value)) changed = true;
      record.custom_fields[key] = text(value);
    }
    if (changed) {
      record.update_time = nowIso();
      state.counters.updated[entity] += 1;
    }
    return ok(view(entity, record));
  });

  // https://developers.pipedrive.com/docs/api/v1/Deals#deleteDeal (v2) — marks the deal
  // deleted (removed for good after 30 days) and answers its id.
  app.delete('/api/v2/:entity/:id', (request, reply) => {
    const params = idParams.safeParse(request.params);
    if (!params.success) return pipedriveError(reply, 404, 'Not found');
    const record = found(params.data.entity, params.data.id);
    if (!record) return pipedriveError(reply, 404, `${params.data.entity.slice(0, -1)} not found`);
    record.is_deleted = true;
    record.update_time = nowIso();
    state.counters.deleted += 1;
    return ok({ id: record.id });
  });

  // https://developers.pipedrive.com/docs/api/v1/PersonFields and /DealFields — the field
  // lists (v1), each field with its `key` (a 40-character hash for custom fields).
  const fieldRoutes: [string, PipedriveEntity][] = [
    ['personFields', 'persons'],
    ['dealFields', 'deals'],
  ];
  for (const [path, entity] of fieldRoutes) {
    app.get(`/v1/${path}`, () =>
      ok([...state.fields[entity].values()], {
        pagination: { start: 0, limit: 500, more_items_in_collection: false },
      }),
    );
    app.post(`/v1/${path}`, (request, reply) => {
      const body = fieldBody.safeParse(request.body);
      if (!body.success) return bad(reply, body.error);
      state.counters.writes += 1;
      return reply.code(201).send(ok(state.addField(entity, body.data.name, body.data.field_type)));
    });
  }
}
