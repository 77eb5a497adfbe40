import { randomBytes, verify } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { countAndFault } from '../admin.js';
import { registerSalesforceQuery } from './query.js';
import {
  MIN_API_VERSION,
  SOBJECTS,
  type SObjectName,
  type SObjectRecord,
  type SalesforceState,
} from './state.js';

/**
 * The Salesforce routes ebsync uses, as Salesforce documents them: the OAuth 2.0 token
 * endpoint, describe, single-record and sObject Collections upsert, create and delete, and the
 * SOQL query resource (query.ts).
 * Errors are Salesforce's list `[{message, errorCode, fields}]`; an item of an sObject
 * Collections answer names its error's code `statusCode` instead (itemError).
 */

export interface SalesforceError {
  message: string;
  errorCode: string;
  fields: string[];
}
const failure = (errorCode: string, message: string, fields: string[] = []): SalesforceError => ({
  message,
  errorCode,
  fields,
});

// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm —
// an error answer is a list of {message, errorCode} (fields where they apply).
function sfError(
  reply: FastifyReply,
  status: number,
  errorCode: string,
  message: string,
): FastifyReply {
  return reply.code(status).send([failure(errorCode, message)]);
}

const versionParam = z.string().regex(/^v\d+\.\d$/);
const sobjectParam = z.enum(SOBJECTS as [SObjectName, ...SObjectName[]]);
const record = z.looseObject({ attributes: z.object({ type: z.string().min(1) }).loose() });
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections_upsert.htm
// — allOrNone (default false) and up to 200 records, each with attributes.type.
const collectionBody = z.strictObject({
  allOrNone: z.boolean().optional(),
  records: z.array(record).min(1),
});
const COLLECTION_MAX = 200;
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** An error as an item of an sObject Collections answer gives it. */
interface ItemError {
  statusCode: string;
  message: string;
  fields: string[];
}
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections.htm
// — the examples of item errors: `{"statusCode": "MALFORMED_ID", "message": …, "fields": […]}`.
const itemError = (e: SalesforceError): ItemError => ({
  statusCode: e.errorCode,
  message: e.message,
  fields: e.fields,
});

interface ItemResult {
  id?: string;
  success: boolean;
  errors: ItemError[];
  created?: boolean;
}

/** What one item will do, decided before anything is written (allOrNone needs that). */
type Plan =
  | { error: SalesforceError }
  | { create: Record<string, unknown> }
  | { update: SObjectRecord; values: Record<string, unknown> };

const isDate = (v: unknown) => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v);

export function registerSalesforceRoutes(
  app: FastifyInstance,
  state: SalesforceState,
  baseUrl: () => string,
): void {
  const nowIso = (): string => new Date(state.now()).toISOString().replace('Z', '+0000');

  // https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_refresh_token_flow.htm
  // — the token request is form-encoded.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(String(body))));
    },
  );

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const fault = countAndFault(state, request);
    if (fault !== undefined) return sfError(reply, fault, 'UNKNOWN_EXCEPTION', 'injected fault');
    if (!request.url.startsWith('/services/data/')) return undefined;
    // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/quickstart_oauth.htm
    // — calls carry the access token as a Bearer token; an unknown or expired one is 401.
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (!bearer || !state.sessions.has(bearer)) {
      return sfError(reply, 401, 'INVALID_SESSION_ID', 'Session expired or invalid');
    }
    // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_versions.htm
    // — the version is part of every path; one the org does not serve is not found.
    const version = /^\/services\/data\/v(\d+)\.\d(\/|$|\?)/.exec(request.url)?.[1];
    if (version === undefined || Number(version) < MIN_API_VERSION) {
      return sfError(reply, 404, 'NOT_FOUND', 'The requested resource does not exist');
    }
    // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/headers_api_usage.htm
    // — every answer says the org's API usage in the last 24 hours as api-usage=N/M; past
    // the allocation, 403 REQUEST_LIMIT_EXCEEDED until calls age out of the window.
    const admitted = state.admit();
    void reply.header(
      'sforce-limit-info',
      `api-usage=${state.usage()}/${state.limits.dailyApiRequests}`,
    );
    void reply.header('date', new Date(state.now()).toUTCString());
    if (!admitted) {
      state.countRateLimited('daily');
      return sfError(reply, 403, 'REQUEST_LIMIT_EXCEEDED', 'TotalRequests Limit exceeded.');
    }
    return undefined;
  });

  const oauthError = (reply: FastifyReply, error: string, description: string) =>
    reply.code(400).send({ error, error_description: description });

  // https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_refresh_token_flow.htm
  // — grant_type=refresh_token with client_id, client_secret and refresh_token; the answer
  // has access_token, instance_url (where API calls go), id, token_type, issued_at and
  // signature. Errors are 400 with error and error_description.
  app.post('/services/oauth2/token', (request, reply) => {
    const form = (request.body ?? {}) as Record<string, unknown>;
    if (form.grant_type === JWT_BEARER) {
      const refused = jwtRefusal(form.assertion);
      if (refused) return oauthError(reply, refused[0], refused[1]);
      return sessionAnswer();
    }
    if (form.grant_type !== 'refresh_token') {
      return oauthError(reply, 'unsupported_grant_type', 'grant type not supported');
    }
    if (form.client_id !== state.app.clientId) {
      return oauthError(reply, 'invalid_client_id', 'client identifier invalid');
    }
    if (form.client_secret !== undefined && form.client_secret !== state.app.clientSecret) {
      return oauthError(reply, 'invalid_client', 'invalid client credentials');
    }
    if (form.refresh_token !== state.app.refreshToken) {
      return oauthError(reply, 'invalid_grant', 'expired access/refresh token');
    }
    // https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_refresh_token_flow.htm
    // — with refresh token rotation on for the app, the answer carries a new refresh_token
    // and the one just presented is invalidated.
    if (state.rotateRefreshTokens) {
      state.app.refreshToken = `5Aep861fake.${randomBytes(24).toString('base64url')}`;
      return { ...sessionAnswer(), refresh_token: state.app.refreshToken };
    }
    return sessionAnswer();
  });

  const sessionAnswer = () => {
    const session = state.issueSession();
    return {
      access_token: session.token,
      signature: session.signature,
      scope: 'api refresh_token',
      instance_url: baseUrl(),
      id: `${baseUrl()}${session.id}`,
      token_type: 'Bearer',
      issued_at: session.issuedAt,
    };
  };

  // https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_jwt_flow.htm — the
  // assertion is a JWT signed RS256 with the key of the app's certificate: iss the consumer
  // key, sub the user, aud the login server, exp at most 3 minutes ahead.
  const jwtRefusal = (assertion: unknown): [string, string] | undefined => {
    const parts = typeof assertion === 'string' ? assertion.split('.') : [];
    const [head, body, signature] = parts;
    if (parts.length !== 3 || !head || !body || !signature) {
      return ['invalid_grant', 'invalid assertion'];
    }
    let header: { alg?: unknown };
    let claims: { iss?: unknown; sub?: unknown; aud?: unknown; exp?: unknown };
    try {
      header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as typeof header;
      claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return ['invalid_grant', 'invalid assertion'];
    }
    const signed = verify(
      'RSA-SHA256',
      Buffer.from(`${head}.${body}`),
      state.app.certificate,
      Buffer.from(signature, 'base64url'),
    );
    if (header.alg !== 'RS256' || !signed) return ['invalid_grant', 'invalid assertion'];
    if (claims.iss !== state.app.clientId)
      return ['invalid_client_id', 'client identifier invalid'];
    if (claims.aud !== baseUrl()) return ['invalid_grant', 'audience is invalid'];
    if (claims.sub !== state.app.username) {
      return ['invalid_grant', "user hasn't approved this consumer"];
    }
    const nowS = state.now() / 1000;
    if (typeof claims.exp !== 'number' || claims.exp < nowS || claims.exp > nowS + 300) {
      return ['invalid_grant', 'expired authorization code'];
    }
    return undefined;
  };

  const fieldsOf = (type: SObjectName) => state.fields[type];

  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_sobject_describe.htm
  // — an object's fields with their type and whether each is an external id.
  app.get('/services/data/:version/sobjects/:sobject/describe', (request, reply) => {
    const sobject = sobjectParam.safeParse((request.params as { sobject: string }).sobject);
    if (!sobject.success)
      return sfError(reply, 404, 'NOT_FOUND', 'The requested resource does not exist');
    return {
      name: sobject.data,
      custom: false,
      createable: true,
      updateable: true,
      fields: [...fieldsOf(sobject.data).values()].map((d) => ({
        name: d.name,
        type: d.type,
        externalId: d.externalId,
        unique: d.unique,
        length: d.length,
        nillable: !d.required,
        custom: d.custom,
      })),
    };
  });

  /** Why a record's values do not fit the object (unknown fields, wrong shapes). */
  const valuesError = (type: SObjectName, values: Record<string, unknown>) => {
    for (const [name, value] of Object.entries(values)) {
      const d = fieldsOf(type).get(name);
      if (!d || d.type === 'id') {
        return failure('INVALID_FIELD', `No such column '${name}' on sobject of type ${type}`, [
          name,
        ]);
      }
      if (value === null) continue;
      const ok =
        d.type === 'currency'
          ? typeof value === 'number'
          : d.type === 'boolean'
            ? typeof value === 'boolean'
            : d.type === 'date'
              ? isDate(value)
              : typeof value === 'string';
      if (!ok) {
        return failure('INVALID_TYPE_ON_FIELD_IN_RECORD', `${name}: value not of required type`, [
          name,
        ]);
      }
      if (d.length > 0 && typeof value === 'string' && value.length > d.length) {
        return failure(
          'STRING_TOO_LONG',
          `${name}: data value too large (max length=${d.length})`,
          [name],
        );
      }
    }
    return undefined;
  };
  const missingRequired = (type: SObjectName, values: Record<string, unknown>) => {
    // Salesforce takes a text of spaces alone as no value: a required field so given is
    // missing, as one left out is.
    const blank = (value: unknown) =>
      value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
    const missing = [...fieldsOf(type).values()]
      .filter((d) => d.required && blank(values[d.name]))
      .map((d) => d.name);
    return missing.length > 0
      ? failure(
          'REQUIRED_FIELD_MISSING',
          `Required fields are missing: [${missing.join(', ')}]`,
          missing,
        )
      : undefined;
  };
  const referenceError = (type: SObjectName, values: Record<string, unknown>) => {
    if (type !== 'OpportunityContactRole') return undefined;
    for (const [field, target] of [
      ['OpportunityId', 'Opportunity'],
      ['ContactId', 'Contact'],
    ] as const) {
      const id = values[field];
      const found = typeof id === 'string' ? state.records[target].get(id) : undefined;
      if (!found || found.IsDeleted) {
        return failure('INVALID_CROSS_REFERENCE_KEY', `invalid cross reference id`, [field]);
      }
    }
    return undefined;
  };
  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm and
  // https://help.salesforce.com/s/articleView?id=sf.duplicate_rules_map_of_reference.htm — an
  // active duplicate rule set to block refuses the save with DUPLICATES_DETECTED.
  const duplicateError = (
    type: SObjectName,
    values: Record<string, unknown>,
    except: string | undefined,
    batchEmails: Set<string>,
  ) => {
    if (type !== 'Lead' || !state.blockDuplicateLeadEmails) return undefined;
    const email = typeof values.Email === 'string' ? values.Email.toLowerCase() : '';
    if (!email) return undefined;
    const taken =
      batchEmails.has(email) || state.byField('Lead', 'Email', email).some((r) => r.Id !== except);
    return taken ? failure('DUPLICATES_DETECTED', 'Use one of these records?', []) : undefined;
  };

  const plainValues = (item: Record<string, unknown>): Record<string, unknown> => {
    const values = { ...item };
    delete values.attributes;
    return values;
  };

  /** The outcome of each item, in order; nothing written yet. */
  const planUpsert = (
    type: SObjectName,
    field: string | undefined,
    items: Record<string, unknown>[],
  ): Plan[] => {
    const batchEmails = new Set<string>();
    const batchKeys = new Set<string>();
    return items.map((item): Plan => {
      const attributes = item.attributes as { type?: unknown } | undefined;
      if (attributes?.type !== type) {
        return { error: failure('INVALID_TYPE', `attributes.type must be ${type}`, []) };
      }
      const values = plainValues(item);
      const bad = valuesError(type, values) ?? referenceError(type, values);
      if (bad) return { error: bad };
      let existing: SObjectRecord | undefined;
      if (field !== undefined) {
        const key = values[field];
        if (typeof key !== 'string' || key === '') {
          return { error: failure('MISSING_ARGUMENT', `${field} not specified`, [field]) };
        }
        if (batchKeys.has(key.toLowerCase())) {
          return {
            error: failure(
              'DUPLICATE_VALUE',
              `duplicate value found: ${field} duplicates value on record in this request`,
              [field],
            ),
          };
        }
        batchKeys.add(key.toLowerCase());
        const matches = state.byField(type, field, key);
        // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections_upsert.htm
        // — an external id matching several records fails that item.
        if (matches.length > 1) {
          return {
            error: failure(
              'DUPLICATE_EXTERNAL_ID',
              `${field}: more than one record found for external id field: [${matches.map((m) => m.Id).join(', ')}]`,
              [field],
            ),
          };
        }
        existing = matches[0];
      }
      const dup = duplicateError(type, values, existing?.Id, batchEmails);
      if (dup) return { error: dup };
      if (typeof values.Email === 'string') batchEmails.add(values.Email.toLowerCase());
      if (existing) return { update: existing, values };
      const missing = missingRequired(type, values);
      return missing ? { error: missing } : { create: values };
    });
  };

  const ROLLED_BACK = failure(
    'ALL_OR_NONE_OPERATION_ROLLED_BACK',
    'Record rolled back because not all records were valid and the request was using AllOrNone header',
  );
  const countErrors = (plans: readonly Plan[]) => {
    for (const p of plans) {
      if ('error' in p) {
        state.counters.itemErrors[p.error.errorCode] =
          (state.counters.itemErrors[p.error.errorCode] ?? 0) + 1;
      }
    }
  };
  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections.htm
  // — with allOrNone, one failure rolls the whole request back.
  const rolledBack = (plans: readonly Plan[]): ItemResult[] | undefined =>
    plans.some((p) => 'error' in p)
      ? plans.map((p) => ({
          success: false,
          errors: [itemError('error' in p ? p.error : ROLLED_BACK)],
        }))
      : undefined;

  const apply = (type: SObjectName, plans: Plan[], allOrNone: boolean): ItemResult[] => {
    countErrors(plans);
    const refused = allOrNone ? rolledBack(plans) : undefined;
    if (refused) return refused;
    return plans.map((p): ItemResult => {
      if ('error' in p) return { success: false, errors: [itemError(p.error)] };
      state.counters.writes += 1;
      if ('create' in p) {
        const made = state.insert(type, { ...p.create });
        made.CreatedDate = nowIso();
        made.LastModifiedDate = made.CreatedDate;
        state.counters.created[type] += 1;
        return { id: made.Id, success: true, errors: [], created: true };
      }
      let changed = false;
      for (const [name, value] of Object.entries(p.values)) {
        if (JSON.stringify(p.update.fields[name] ?? null) !== JSON.stringify(value)) changed = true;
        p.update.fields[name] = value;
      }
      if (changed) {
        p.update.LastModifiedDate = nowIso();
        state.counters.updated[type] += 1;
      }
      return { id: p.update.Id, success: true, errors: [], created: false };
    });
  };

  const externalField = (type: SObjectName, name: string) => {
    const d = fieldsOf(type).get(name);
    return d?.externalId || name === 'Id';
  };

  const collection = (request: FastifyRequest, reply: FastifyReply) => {
    const body = collectionBody.safeParse(request.body);
    if (!body.success) {
      const issue = body.error.issues[0];
      return {
        error: reply
          .code(400)
          .send([
            failure(
              'JSON_PARSER_ERROR',
              `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'malformed request'}`,
            ),
          ]),
      };
    }
    if (body.data.records.length > COLLECTION_MAX) {
      return {
        error: sfError(
          reply,
          400,
          'EXCEEDED_ID_LIMIT',
          `record limit reached. cannot submit more than ${COLLECTION_MAX} records into this call`,
        ),
      };
    }
    return { records: body.data.records, allOrNone: body.data.allOrNone ?? false };
  };

  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections_upsert.htm
  // — PATCH …/composite/sobjects/{SObject}/{ExternalIdField}: results in request order, each
  // {id, success, errors, created}.
  app.patch('/services/data/:version/composite/sobjects/:sobject/:field', (request, reply) => {
    const params = request.params as { version: string; sobject: string; field: string };
    const sobject = sobjectParam.safeParse(params.sobject);
    if (!versionParam.safeParse(params.version).success || !sobject.success) {
      return sfError(reply, 404, 'NOT_FOUND', 'The requested resource does not exist');
    }
    if (!externalField(sobject.data, params.field)) {
      return sfError(
        reply,
        400,
        'INVALID_FIELD',
        `Field ${params.field} is not an External ID or indexed field for ${sobject.data}`,
      );
    }
    const parsed = collection(request, reply);
    if ('error' in parsed) return parsed.error;
    const plans = planUpsert(sobject.data, params.field, parsed.records);
    return apply(sobject.data, plans, parsed.allOrNone);
  });

  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections_create.htm
  // — POST …/composite/sobjects creates up to 200 records (of any objects), in order.
  app.post('/services/data/:version/composite/sobjects', (request, reply) => {
    const parsed = collection(request, reply);
    if ('error' in parsed) return parsed.error;
    const plans: { type: SObjectName; plan: Plan }[] = parsed.records.map((item) => {
      const type = sobjectParam.safeParse(item.attributes.type);
      if (!type.success) {
        const message = `sObject type '${String(item.attributes.type)}' is not supported`;
        return { type: 'Lead', plan: { error: failure('INVALID_TYPE', message) } };
      }
      return { type: type.data, plan: planUpsert(type.data, undefined, [item])[0]! };
    });
    if (parsed.allOrNone) {
      const refused = rolledBack(plans.map((p) => p.plan));
      if (refused) {
        countErrors(plans.map((p) => p.plan));
        return refused;
      }
    }
    return plans.map(({ type, plan }) => {
      const result = apply(type, [plan], false)[0]!;
      delete result.created;
      return result;
    });
  });

  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/resources_composite_sobjects_collections_delete.htm
  // — DELETE …/composite/sobjects?ids=…&allOrNone=…: up to 200 ids; deleted records go to
  // the Recycle Bin.
  app.delete('/services/data/:version/composite/sobjects', (request, reply) => {
    const query = z
      .object({ ids: z.string().min(1), allOrNone: z.enum(['true', 'false']).optional() })
      .safeParse(request.query);
    if (!query.success) return sfError(reply, 400, 'MISSING_ARGUMENT', 'ids not specified');
    const ids = query.data.ids.split(',').filter(Boolean);
    if (ids.length > COLLECTION_MAX) {
      return sfError(
        reply,
        400,
        'EXCEEDED_ID_LIMIT',
        `cannot delete more than ${COLLECTION_MAX} records in one call`,
      );
    }
    const found = ids.map((id) => {
      for (const type of SOBJECTS) {
        const r = state.records[type].get(id);
        if (r) return r;
      }
      return undefined;
    });
    for (const r of found) {
      if (r && state.deletedMeanwhile.delete(r.Id)) {
        r.IsDeleted = true;
        r.LastModifiedDate = nowIso();
      }
    }
    const errorOf = (r: SObjectRecord | undefined) =>
      !r
        ? failure('INVALID_CROSS_REFERENCE_KEY', 'invalid cross reference id')
        : r.IsDeleted
          ? failure('ENTITY_IS_DELETED', 'entity is deleted')
          : state.deleteRefused.has(r.Id)
            ? // https://developer.salesforce.com/docs/atlas.en-us.apexcode.meta/apexcode/apex_triggers_exceptions.htm
              // — a trigger's addError() fails the record's DML with the trigger's message.
              failure(
                'FIELD_CUSTOM_VALIDATION_EXCEPTION',
                'Records with open invoices cannot be deleted',
              )
            : undefined;
    const anyFailed = found.some((r) => errorOf(r) !== undefined);
    return found.map((r, i) => {
      const error = errorOf(r);
      if (error) {
        state.counters.itemErrors[error.errorCode] =
          (state.counters.itemErrors[error.errorCode] ?? 0) + 1;
        return { id: ids[i], success: false, errors: [itemError(error)] };
      }
      if (query.data.allOrNone === 'true' && anyFailed) {
        return {
          id: ids[i],
          success: false,
          errors: [itemError(ROLLED_BACK)],
        };
      }
      r!.IsDeleted = true;
      r!.LastModifiedDate = nowIso();
      state.counters.deleted += 1;
      return { id: r!.Id, success: true, errors: [] };
    });
  });

  const recordView = (version: string, r: SObjectRecord) => ({
    attributes: { type: r.type, url: `/services/data/${version}/sobjects/${r.type}/${r.Id}` },
    Id: r.Id,
    ...r.fields,
    CreatedDate: r.CreatedDate,
    LastModifiedDate: r.LastModifiedDate,
  });

  const singleParams = (request: FastifyRequest, reply: FastifyReply) => {
    const params = request.params as {
      version: string;
      sobject: string;
      field: string;
      value: string;
    };
    const sobject = sobjectParam.safeParse(params.sobject);
    if (!sobject.success) {
      sfError(reply, 404, 'NOT_FOUND', 'The requested resource does not exist');
      return undefined;
    }
    if (!externalField(sobject.data, params.field)) {
      sfError(
        reply,
        400,
        'INVALID_FIELD',
        `Field ${params.field} is not an External ID or indexed field for ${sobject.data}`,
      );
      return undefined;
    }
    return { ...params, sobject: sobject.data };
  };
  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_upsert.htm
  // — several records with this external id: 300 Multiple Choices with their URLs.
  const multiple = (reply: FastifyReply, version: string, matches: SObjectRecord[]) =>
    reply
      .code(300)
      .send(matches.map((m) => `/services/data/${version}/sobjects/${m.type}/${m.Id}`));

  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_upsert.htm
  // — GET by external id: the record, 404 when none, 300 when several.
  app.get('/services/data/:version/sobjects/:sobject/:field/:value', (request, reply) => {
    const p = singleParams(request, reply);
    if (!p) return reply;
    const matches = state.byField(p.sobject, p.field, p.value);
    if (matches.length > 1) return multiple(reply, p.version, matches);
    const [only] = matches;
    if (!only) return sfError(reply, 404, 'NOT_FOUND', 'The requested resource does not exist');
    return recordView(p.version, only);
  });

  // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_upsert.htm
  // — PATCH by external id: 201 created, 200 updated (body {id, success, errors, created}),
  // 300 when several records match, 400 with the errors otherwise.
  app.patch('/services/data/:version/sobjects/:sobject/:field/:value', (request, reply) => {
    const p = singleParams(request, reply);
    if (!p) return reply;
    const body = z.record(z.string(), z.unknown()).safeParse(request.body ?? {});
    if (!body.success) return sfError(reply, 400, 'JSON_PARSER_ERROR', 'expected a JSON object');
    const matches = state.byField(p.sobject, p.field, p.value);
    if (matches.length > 1) return multiple(reply, p.version, matches);
    const item = { attributes: { type: p.sobject }, ...body.data, [p.field]: p.value };
    const [result] = apply(p.sobject, planUpsert(p.sobject, p.field, [item]), false);
    if (!result?.success) return reply.code(400).send(result?.errors ?? []);
    return reply.code(result.created ? 201 : 200).send(result);
  });

  registerSalesforceQuery(app, state);
}
