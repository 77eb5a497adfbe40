import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { zonedIso } from '../../time.js';
import { countAndFault } from '../admin.js';
import {
  DEFAULT_PIPELINE_STAGES,
  OBJECT_TYPES,
  type CrmObject,
  type HubSpotState,
  type ObjectType,
} from './state.js';

/**
 * The HubSpot CRM routes ebsync uses, as HubSpot documents them: v3 objects (batch upsert,
 * read, archive, single create), v3 properties, v4 default associations. Answers keep
 * HubSpot's shapes: `{status:'error', category, message, correlationId}` for errors.
 */

// https://developers.hubspot.com/docs/api/crm/understanding-the-crm — batch endpoints take
// at most 100 inputs per call.
const MAX_BATCH = 100;

// https://developers.hubspot.com/docs/api/crm/associations — default association type ids:
// deal to contact 3, contact to deal 4.
export const DEAL_TO_CONTACT = 3;
export const CONTACT_TO_DEAL = 4;

const ACCOUNT_DETAILS = '/account-info/v3/details';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function hubspotError(
  reply: FastifyReply,
  status: number,
  category: string,
  message: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  return reply
    .code(status)
    .send({ status: 'error', category, message, correlationId: randomUUID(), ...extra });
}

const objectTypeParam = z.object({ type: z.enum(OBJECT_TYPES) });
const propertyValues = z.record(
  z.string(),
  z.union([z.string(), z.number(), z.boolean(), z.null()]),
);
const upsertBody = z.object({
  inputs: z.array(
    z.object({
      id: z.string().min(1),
      idProperty: z.string().min(1).optional(),
      objectWriteTraceId: z.string().min(1).optional(),
      properties: propertyValues,
    }),
  ),
});
const readBody = z.object({
  idProperty: z.string().min(1).optional(),
  properties: z.array(z.string()).optional(),
  inputs: z.array(z.object({ id: z.string().min(1) })),
});
const idsBody = z.object({ inputs: z.array(z.object({ id: z.string().min(1) })) });
const createBody = z.object({ properties: propertyValues });
const propertyBody = z.object({
  name: z.string().regex(/^[a-z][a-z0-9_]*$/),
  label: z.string().min(1),
  type: z.string().min(1),
  fieldType: z.string().min(1),
  groupName: z.string().min(1),
  hasUniqueValue: z.boolean().optional(),
});
const associateBody = z.object({
  inputs: z.array(
    z.object({ from: z.object({ id: z.string() }), to: z.object({ id: z.string() }) }),
  ),
});

const text = (value: string | number | boolean | null): string | null =>
  value === null ? null : String(value);

function view(object: CrmObject, wanted?: readonly string[]) {
  const properties: Record<string, string | null> = { hs_object_id: object.id };
  for (const [name, value] of Object.entries(object.properties)) {
    if (!wanted || wanted.includes(name)) properties[name] = value;
  }
  return {
    id: object.id,
    properties,
    createdAt: object.createdAt,
    updatedAt: object.updatedAt,
    archived: object.archived,
  };
}

export function registerHubSpotRoutes(app: FastifyInstance, state: HubSpotState): void {
  const nowIso = (): string => new Date(state.now()).toISOString();

  // https://developers.hubspot.com/docs/api/usage-details — every answer carries the
  // X-HubSpot-RateLimit-* headers; over a limit the answer is 429 with the policy's name.
  // https://developers.hubspot.com/docs/api/private-apps — a private app's access token
  // goes in `Authorization: Bearer`.
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    // A portal without a time zone set serves no account information, as the fake did before
    // it had the route: not counted, faulted or limited, so a switch set for the next call
    // still meets the call a test means.
    if (request.url.startsWith(ACCOUNT_DETAILS) && state.timeZone === undefined) {
      return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Not found');
    }
    const fault = countAndFault(state, request);
    if (fault !== undefined) return hubspotError(reply, fault, 'INTERNAL_ERROR', 'injected fault');
    if (state.stall && state.stall.count > 0) {
      state.stall.count -= 1;
      await sleep(state.stall.ms);
    }
    if (request.headers.authorization !== `Bearer ${state.token}`) {
      return hubspotError(
        reply,
        401,
        'INVALID_AUTHENTICATION',
        'Authentication credentials not found or not valid.',
      );
    }
    if (!state.accountInfoCounts && request.url.startsWith(ACCOUNT_DETAILS)) return undefined;
    const { policy, headers } = state.admit();
    void reply.headers(headers);
    if (policy) {
      state.countRateLimited(policy);
      return reply.code(429).send({
        status: 'error',
        errorType: 'RATE_LIMIT',
        policyName: policy,
        message:
          policy === 'DAILY'
            ? 'You have reached your daily limit.'
            : 'You have reached your ten_secondly_rolling limit.',
        correlationId: randomUUID(),
      });
    }
    return undefined;
  });

  const bad = (reply: FastifyReply, error: z.ZodError) =>
    hubspotError(
      reply,
      400,
      'VALIDATION_ERROR',
      `Invalid input JSON: ${error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );

  /** Property names the portal does not define, in a map of values. */
  const unknownProperties = (type: ObjectType, values: Record<string, unknown>): string[] =>
    Object.keys(values).filter((name) => !state.properties[type].has(name));

  /** Why one input cannot be written, or undefined. */
  function itemProblem(
    type: ObjectType,
    values: Record<string, string | null>,
    self: CrmObject | undefined,
  ): { category: string; message: string } | undefined {
    const email = values.email;
    if (type === 'contacts' && email !== undefined && email !== null && !EMAIL.test(email)) {
      return { category: 'VALIDATION_ERROR', message: `Email address ${email} is invalid` };
    }
    // https://developers.hubspot.com/docs/api/crm/pipelines — a deal's stage must be one of
    // its pipeline's stage ids.
    const stage = values.dealstage;
    if (type === 'deals' && stage !== undefined && stage !== null) {
      if (!DEFAULT_PIPELINE_STAGES.includes(stage)) {
        return { category: 'VALIDATION_ERROR', message: `${stage} is not a valid deal stage` };
      }
    }
    for (const rule of state.validationRules) {
      const value = values[rule.property];
      if (rule.objectType !== type || value === undefined || value === null) continue;
      if (rule.maxLength !== undefined && value.length > rule.maxLength) {
        return {
          category: 'VALIDATION_ERROR',
          message: `Property values were not valid: ${rule.property} is longer than ${rule.maxLength} characters`,
        };
      }
      if (rule.pattern !== undefined && !new RegExp(rule.pattern).test(value)) {
        return {
          category: 'VALIDATION_ERROR',
          message: `Property values were not valid: ${rule.property} does not match the rule ${rule.pattern}`,
        };
      }
    }
    // https://developers.hubspot.com/docs/api/crm/properties — a property with
    // hasUniqueValue refuses a value another record already holds.
    for (const [name, value] of Object.entries(values)) {
      if (value === null || !state.isUnique(type, name)) continue;
      const holder = state.findBy(type, name, value);
      if (holder && holder !== self) {
        return {
          category: 'CONFLICT',
          message: `A ${type.slice(0, -1)} with ${name} ${value} already exists. Existing ID: ${holder.id}`,
        };
      }
    }
    return undefined;
  }

  function write(type: ObjectType, object: CrmObject, values: Record<string, string | null>) {
    let changed = false;
    for (const [name, value] of Object.entries(values)) {
      if ((object.properties[name] ?? null) !== value) changed = true;
      object.properties[name] = value;
    }
    if (changed) {
      object.updatedAt = nowIso();
      state.counters.updated[type] += 1;
    }
  }

  function create(type: ObjectType, values: Record<string, string | null>): CrmObject {
    const at = nowIso();
    const object: CrmObject = {
      id: state.newId(),
      properties: { ...values },
      createdAt: at,
      updatedAt: at,
      archived: false,
    };
    state.objects[type].set(object.id, object);
    state.counters.created[type] += 1;
    return object;
  }

  // https://developers.hubspot.com/docs/api/crm/contacts — batch upsert: each input names
  // its record by a unique property (`idProperty`, e.g. email); the answer marks each result
  // `new`, and is 207 with `errors` and `numErrors` when some inputs failed.
  // https://developers.hubspot.com/docs/api-reference/error-handling (Multi-status errors) —
  // an input may carry a unique `objectWriteTraceId`; the error of a failed one names it in
  // `context.objectWriteTraceId` (a list). An input without one is named by its id in
  // `context.ids`, as batch read names the ids it did not find.
  // https://developers.hubspot.com/docs/api-reference/latest/account/account-information/get-account-details
  // — the portal's time zone and its offset from UTC now, in milliseconds.
  app.get(ACCOUNT_DETAILS, (_request, reply) => {
    const zone = state.timeZone;
    if (zone === undefined) return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Not found');
    const now = state.now();
    // The zone's wall clock read as if it were UTC, less the instant: the offset now.
    const wall = Date.parse(`${zonedIso(now, zone).slice(0, 19)}Z`);
    const utcOffsetMilliseconds = wall - Math.floor(now / 1000) * 1000;
    return { portalId: 1, accountType: 'STANDARD', timeZone: zone, utcOffsetMilliseconds };
  });

  app.post('/crm/v3/objects/:type/batch/upsert', (request, reply) => {
    const params = objectTypeParam.safeParse(request.params);
    if (!params.success) return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Unknown object type');
    const type = params.data.type;
    const body = upsertBody.safeParse(request.body);
    if (!body.success) return bad(reply, body.error);
    const inputs = body.data.inputs;
    if (inputs.length > MAX_BATCH) {
      return hubspotError(
        reply,
        400,
        'VALIDATION_ERROR',
        `Batch size ${inputs.length} exceeds ${MAX_BATCH}`,
      );
    }
    const queryId = (request.query as { idProperty?: unknown }).idProperty;
    const startedAt = nowIso();
    const results: (ReturnType<typeof view> & { new: boolean })[] = [];
    const errors: unknown[] = [];
    for (const input of inputs) {
      const idProperty = input.idProperty ?? (typeof queryId === 'string' ? queryId : undefined);
      if (!idProperty || !state.isUnique(type, idProperty)) {
        return hubspotError(
          reply,
          400,
          'VALIDATION_ERROR',
          `idProperty ${idProperty ?? '(missing)'} is not a unique-value property of ${type}`,
        );
      }
      const unknown = unknownProperties(type, input.properties);
      if (unknown.length > 0) {
        return hubspotError(
          reply,
          400,
          'VALIDATION_ERROR',
          `Property values were not valid: ${unknown.map((n) => `Property "${n}" does not exist`).join(', ')}`,
        );
      }
      state.counters.upsertInputs += 1;
      const values: Record<string, string | null> = {};
      for (const [name, value] of Object.entries(input.properties)) values[name] = text(value);
      if (idProperty !== 'hs_object_id') values[idProperty] = input.id;
      const existing = state.findBy(type, idProperty, input.id);
      const problem = itemProblem(type, values, existing);
      if (problem) {
        errors.push({
          status: 'error',
          category: problem.category,
          message: problem.message,
          ...(state.itemErrorContext === 'none'
            ? {}
            : {
                context:
                  input.objectWriteTraceId && state.itemErrorContext === 'trace'
                    ? { objectWriteTraceId: [input.objectWriteTraceId] }
                    : { ids: [input.id] },
              }),
        });
        continue;
      }
      if (existing) {
        write(type, existing, values);
        results.push({ ...view(existing), new: false });
      } else {
        results.push({ ...view(create(type, values)), new: true });
      }
    }
    const answer = { status: 'COMPLETE', results, startedAt, completedAt: nowIso() };
    if (errors.length === 0) return reply.code(200).send(answer);
    return reply.code(207).send({ ...answer, numErrors: errors.length, errors });
  });

  // https://developers.hubspot.com/docs/api/crm/contacts — creating a contact whose email
  // another contact has answers 409 CONFLICT naming the existing id.
  app.post('/crm/v3/objects/:type', (request, reply) => {
    const params = objectTypeParam.safeParse(request.params);
    if (!params.success) return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Unknown object type');
    const type = params.data.type;
    const body = createBody.safeParse(request.body);
    if (!body.success) return bad(reply, body.error);
    const unknown = unknownProperties(type, body.data.properties);
    if (unknown.length > 0) {
      return hubspotError(
        reply,
        400,
        'VALIDATION_ERROR',
        `Property "${unknown[0]}" does not exist`,
      );
    }
    const values: Record<string, string | null> = {};
    for (const [name, value] of Object.entries(body.data.properties)) values[name] = text(value);
    const email = values.email;
    if (type === 'contacts' && email) {
      const existing = state.findBy('contacts', 'email', email);
      if (existing) {
        return hubspotError(
          reply,
          409,
          'CONFLICT',
          `Contact already exists. Existing ID: ${existing.id}`,
        );
      }
    }
    const problem = itemProblem(type, values, undefined);
    if (problem) {
      return hubspotError(
        reply,
        problem.category === 'CONFLICT' ? 409 : 400,
        problem.category,
        problem.message,
      );
    }
    return reply.code(201).send(view(create(type, values)));
  });

  // https://developers.hubspot.com/docs/api/crm/deals — batch read by id or by a unique
  // property (`idProperty`); ids that match nothing come back in `errors` with a 207.
  // https://developers.hubspot.com/docs/api-reference/error-handling — a 207's errors each
  // have a category; the records of `readRefused` come back under theirs.
  app.post('/crm/v3/objects/:type/batch/read', (request, reply) => {
    const params = objectTypeParam.safeParse(request.params);
    if (!params.success) return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Unknown object type');
    const type = params.data.type;
    const body = readBody.safeParse(request.body);
    if (!body.success) return bad(reply, body.error);
    if (body.data.inputs.length > MAX_BATCH) {
      return hubspotError(reply, 400, 'VALIDATION_ERROR', `Batch size exceeds ${MAX_BATCH}`);
    }
    const idProperty = body.data.idProperty ?? 'hs_object_id';
    if (!state.isUnique(type, idProperty)) {
      return hubspotError(
        reply,
        400,
        'VALIDATION_ERROR',
        `${idProperty} is not a unique-value property`,
      );
    }
    const startedAt = nowIso();
    const results = [];
    const missing: string[] = [];
    // Inputs the portal would not read (an admin switch), grouped by their error.
    const unread = new Map<string, { category: string; message: string; ids: string[] }>();
    for (const { id } of body.data.inputs) {
      const found = state.findBy(type, idProperty, id);
      const refusal = found && state.readRefused.get(found.id);
      if (refusal) {
        const group = `${refusal.category}|${refusal.message}`;
        const ids = unread.get(group)?.ids ?? [];
        unread.set(group, { ...refusal, ids: [...ids, id] });
      } else if (found) results.push(view(found, body.data.properties));
      else missing.push(id);
    }
    const errors = [
      ...(missing.length > 0
        ? [
            {
              status: 'error',
              category: 'OBJECT_NOT_FOUND',
              message: 'Could not get some objects, they may be deleted or not exist.',
              context: { ids: missing },
            },
          ]
        : []),
      ...[...unread.values()].map(({ category, message, ids }) => ({
        status: 'error',
        category,
        message,
        ...(state.itemErrorContext === 'none' ? {} : { context: { ids } }),
      })),
    ];
    const answer = { status: 'COMPLETE', results, startedAt, completedAt: nowIso() };
    if (errors.length === 0) return reply.code(200).send(answer);
    return reply.code(207).send({ ...answer, numErrors: errors.length, errors });
  });

  // https://developers.hubspot.com/docs/api/crm/deals — batch archive moves records to the
  // recycling bin and answers 204; unknown ids are ignored.
  app.post('/crm/v3/objects/:type/batch/archive', (request, reply) => {
    const params = objectTypeParam.safeParse(request.params);
    if (!params.success) return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Unknown object type');
    const body = idsBody.safeParse(request.body);
    if (!body.success) return bad(reply, body.error);
    for (const { id } of body.data.inputs) {
      const found = state.objects[params.data.type].get(id);
      if (found && !found.archived) {
        found.archived = true;
        found.updatedAt = nowIso();
        state.counters.archived += 1;
      }
    }
    return reply.code(204).send();
  });

  // https://developers.hubspot.com/docs/api/crm/properties — create a property (409 when
  // the name is taken); `hasUniqueValue` is fixed at creation.
  app.post('/crm/v3/properties/:type', (request, reply) => {
    const params = objectTypeParam.safeParse(request.params);
    if (!params.success) return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Unknown object type');
    const body = propertyBody.safeParse(request.body);
    if (!body.success) return bad(reply, body.error);
    const defs = state.properties[params.data.type];
    if (defs.has(body.data.name)) {
      return hubspotError(
        reply,
        409,
        'OBJECT_ALREADY_EXISTS',
        `A property named '${body.data.name}' already exists.`,
      );
    }
    const def = {
      ...body.data,
      hasUniqueValue: body.data.hasUniqueValue ?? false,
      hubspotDefined: false,
    };
    defs.set(def.name, def);
    return reply.code(201).send(def);
  });

  // https://developers.hubspot.com/docs/api/crm/properties — every property of an object
  // type, each with its `type`, as `{results}`.
  app.get('/crm/v3/properties/:type', (request, reply) => {
    const params = objectTypeParam.safeParse(request.params);
    if (!params.success) return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Unknown object type');
    return reply.code(200).send({ results: [...state.properties[params.data.type].values()] });
  });

  app.get('/crm/v3/properties/:type/:name', (request, reply) => {
    const params = objectTypeParam.extend({ name: z.string() }).safeParse(request.params);
    if (!params.success) return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Unknown object type');
    const def = state.properties[params.data.type].get(params.data.name);
    if (!def) {
      return hubspotError(
        reply,
        404,
        'OBJECT_NOT_FOUND',
        `Unable to find property ${params.data.name}`,
      );
    }
    return reply.code(200).send(def);
  });

  // https://developers.hubspot.com/docs/api/crm/properties — hasUniqueValue cannot be
  // changed on an existing property.
  app.patch('/crm/v3/properties/:type/:name', (request, reply) => {
    const params = objectTypeParam.extend({ name: z.string() }).safeParse(request.params);
    if (!params.success) return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Unknown object type');
    const def = state.properties[params.data.type].get(params.data.name);
    if (!def) return hubspotError(reply, 404, 'OBJECT_NOT_FOUND', 'Unable to find property');
    const patch = propertyBody.partial().safeParse(request.body);
    if (!patch.success) return bad(reply, patch.error);
    if (
      patch.data.hasUniqueValue !== undefined &&
      patch.data.hasUniqueValue !== def.hasUniqueValue
    ) {
      return hubspotError(reply, 400, 'VALIDATION_ERROR', 'hasUniqueValue cannot be changed');
    }
    Object.assign(def, { ...patch.data, name: def.name });
    return reply.code(200).send(def);
  });

  // https://developers.hubspot.com/docs/api/crm/associations — v4 batch "associate default"
  // links each pair with the default (unlabeled) type, in both directions.
  // https://developers.hubspot.com/docs/api-reference/latest/crm/associations/associate-records/batch/create-associations
  // — each result is `{associationSpec, from: {id}, to: {id}}` (the labelled `batch/create`
  // answers `fromObjectId`/`toObjectId` instead, which this fake gave here before).
  app.post('/crm/v4/associations/deals/contacts/batch/associate/default', (request, reply) => {
    const body = associateBody.safeParse(request.body);
    if (!body.success) return bad(reply, body.error);
    const results = [];
    const errors = [];
    for (const { from, to } of body.data.inputs) {
      const deal = state.objects.deals.get(from.id);
      const contact = state.objects.contacts.get(to.id);
      if (!deal || deal.archived || !contact || contact.archived) {
        errors.push({
          status: 'error',
          category: 'VALIDATION_ERROR',
          message: `No deal ${from.id} or contact ${to.id} to associate`,
        });
        continue;
      }
      const pair = `${deal.id}|${contact.id}`;
      const limit = state.contactsPerDeal;
      const linked = [...state.dealContacts].filter((p) => p.startsWith(`${deal.id}|`)).length;
      if (!state.dealContacts.has(pair) && limit !== null && linked >= limit) {
        errors.push({
          status: 'error',
          category: 'VALIDATION_ERROR',
          message: `Deal ${deal.id} has reached its limit of ${limit} associated contacts`,
          context: { fromObjectId: [deal.id], toObjectId: [contact.id] },
        });
        continue;
      }
      if (!state.dealContacts.has(pair)) {
        state.dealContacts.add(pair);
        state.counters.associations += 1;
      }
      results.push({
        from: { id: deal.id },
        to: { id: contact.id },
        associationSpec: {
          associationCategory: 'HUBSPOT_DEFINED',
          associationTypeId: DEAL_TO_CONTACT,
        },
      });
    }
    const answer = { status: 'COMPLETE', results, startedAt: nowIso(), completedAt: nowIso() };
    if (errors.length === 0) return reply.code(200).send(answer);
    return reply.code(207).send({ ...answer, numErrors: errors.length, errors });
  });
}
