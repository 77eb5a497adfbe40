import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { readNumber, type NumberRule } from './body-fields.js';
import { badRequest, FieldErrors, humanize } from './errors.js';

/** The most one POST /admin/clock/advance moves the clock: a hundred years. */
export const CLOCK_STEP_MAX_MS = 100 * 365.25 * 24 * 3600 * 1000;
import { PERMISSIONS } from './permissions.js';
import { WEBHOOK_RECORD_TYPES, webhookSecretProblem } from './webhooks.js';
import { malformedParam, queryId, queryParam, type Query } from './query-params.js';

/** Bodies, path and query values of the /admin routes, read with zod into the spec's error shapes. */

function validTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * A JSON number read by the API's own rule (readNumber), so an admin refusal says what is
 * allowed as the API's do: zod's own words were 'must be a int', with no bound.
 */
function number(rule: NumberRule) {
  return z.unknown().transform((value, ctx) => {
    const read = readNumber(value, rule);
    if (typeof read === 'number') return read;
    ctx.addIssue({ code: 'custom', message: read });
    return z.NEVER;
  });
}

/** 'a, b or c' */
function alternatives(values: readonly (string | number)[]): string {
  return values.length < 2
    ? values.join('')
    : `${values.slice(0, -1).join(', ')} or ${String(values[values.length - 1])}`;
}

/** One of a few numbers, sent as a JSON number or as its digits (`429` or `'429'`). */
function code<const T extends number>(values: readonly T[]) {
  return z.unknown().transform((value, ctx) => {
    const found = values.find((v) => value === v || value === String(v));
    if (found !== undefined) return found;
    ctx.addIssue({ code: 'custom', message: `must be ${alternatives(values)}` });
    return z.NEVER;
  });
}

const permission = z.enum(PERMISSIONS);
const permissionList = z.array(permission);
const id = number({ integer: true, min: 1 });
const httpUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.hash === '';
  } catch {
    return false;
  }
}, 'must be an absolute http(s) URL without a fragment');

export const schemas = {
  business: z.object({
    name: z.string().trim().min(1),
    time_zone: z.string().refine(validTimeZone, 'must be an IANA time zone').optional(),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be a three-letter currency code')
      .optional(),
    owner: z.object({ name: z.string().trim().min(1), email: z.email() }).optional(),
  }),
  businessPatch: z.object({ suspended: z.boolean() }),
  user: z.object({
    business_id: id.optional(),
    name: z.string().trim().min(1),
    email: z.email(),
    role: z.enum(['admin', 'staff', 'customer']).optional(),
    permissions: permissionList.optional(),
  }),
  key: z.object({
    user_id: id.optional(),
    name: z.string().trim().min(1).optional(),
    permissions: permissionList.optional(),
  }),
  app: z.object({
    name: z.string().trim().min(1),
    redirect_uris: z.array(httpUrl).min(1),
    permissions: permissionList.min(1),
  }),
  install: z.object({ business_id: id.optional(), user_id: id.optional() }),
  uninstall: z.object({ business_id: id }),
  oauth: z.object({
    auto_approve: z.boolean().optional(),
    installing_user_id: id.nullable().optional(),
  }),
  recordPatch: z.object({ attributes: z.record(z.string(), z.unknown()) }),
  webhook: z.object({
    url: httpUrl,
    business_id: id.optional(),
    types: z.array(z.enum(WEBHOOK_RECORD_TYPES)).min(1).nullable().optional(),
    secret: z
      .string()
      .superRefine((secret, issues) => {
        const problem = webhookSecretProblem(secret);
        if (problem) issues.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
  }),
  faults: z.object({
    error_rate: number({ min: 0, max: 1 }).optional(),
    error_statuses: z
      .array(code([500, 502, 503]))
      .min(1)
      .optional(),
    latency_ms: number({ integer: true, min: 0, max: 60_000 }).optional(),
    drop_rate: number({ min: 0, max: 1 }).optional(),
  }),
  rateLimit: z.object({
    per_second: number({ integer: true, min: 0 }).optional(),
    mode: code([429, 403])
      .transform((m) => String(m) as '429' | '403')
      .optional(),
  }),
  // A hundred years at a time at most: far past any token's life, and far from the end of
  // what a Date holds (the clock's ISO time must stay a four-digit year, see advanceClock).
  clock: z
    .object({
      ms: number({ integer: true, min: 0, max: CLOCK_STEP_MAX_MS }).optional(),
      seconds: number({ min: 0, max: CLOCK_STEP_MAX_MS / 1000 }).optional(),
    })
    .superRefine((v, ctx) => {
      const problem =
        v.ms === undefined && v.seconds === undefined
          ? "can't be blank: send seconds, or ms in milliseconds"
          : v.ms !== undefined && v.seconds !== undefined
            ? 'and ms: send one of them, not both'
            : undefined;
      if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['seconds'] });
    }),
};

export function valueAt(body: unknown, path: readonly PropertyKey[]): unknown {
  let value: unknown = body;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** One line for a zod issue, saying what the field takes where zod's own words did not. */
function issueMessage(issue: z.core.$ZodIssue, missing: boolean): string {
  if (issue.code === 'custom') return issue.message;
  if (missing) return "can't be blank";
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${issue.expected === 'array' || issue.expected === 'object' ? 'an' : 'a'} ${issue.expected}`;
    case 'invalid_value':
      return `must be ${alternatives(issue.values.map(String))}`;
    case 'too_small':
      return issue.origin === 'array'
        ? `must have at least ${String(issue.minimum)}`
        : issue.origin === 'string' && Number(issue.minimum) === 1
          ? "can't be blank"
          : `must be at least ${String(issue.minimum)}`;
    default:
      return issue.message.startsWith('must ') ? issue.message : `is invalid (${issue.message})`;
  }
}

/** The object schema under optional and nullable wrappers, if it is one. */
function objectSchema(schema: z.ZodType): z.ZodObject | undefined {
  let inner: z.ZodType = schema;
  while (inner instanceof z.ZodOptional || inner instanceof z.ZodNullable) {
    inner = inner.unwrap() as z.ZodType;
  }
  return inner instanceof z.ZodObject ? inner : undefined;
}

/**
 * Adds an error for each key of `input` its object schema does not have, at any depth
 * (`owner.nickname` too: zod drops such keys without a word), naming the keys it has.
 */
function refuseUnknownKeys(
  schema: z.ZodType,
  input: unknown,
  path: readonly string[],
  errors: FieldErrors,
): void {
  const object = objectSchema(schema);
  if (!object || typeof input !== 'object' || input === null || Array.isArray(input)) return;
  const shape = object.shape as Record<string, z.ZodType>;
  const known = Object.keys(shape);
  for (const [key, value] of Object.entries(input)) {
    const at = [...path, key];
    const field = shape[key];
    if (field) {
      refuseUnknownKeys(field, value, at, errors);
      continue;
    }
    const where = path.length === 0 ? 'this request' : path.join('.');
    errors.add(
      at.join('.'),
      `is not a field of ${where}; the fields are ${known.join(', ')}`,
      humanize(at.join('.').slice(0, 40)),
    );
  }
}

/**
 * Parses an admin body; 400 when it is not an object, 422 with per-field messages otherwise.
 * A field the body's schema does not have is refused naming those it has: ignored, a typo
 * (`perSecond`) left the setting as it was while the answer said 200.
 */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const input = body === undefined || body === null ? {} : body;
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw badRequest('invalid_body', 'The request body must be a JSON object');
  }
  const errors = new FieldErrors();
  refuseUnknownKeys(schema, input, [], errors);
  const result = schema.safeParse(input);
  if (result.success && errors.empty) return result.data;
  for (const issue of result.error?.issues ?? []) {
    const field = issue.path.map(String).join('.') || 'base';
    errors.add(field, issueMessage(issue, valueAt(input, issue.path) === undefined));
  }
  errors.throwIfAny();
  throw new Error('unreachable: zod failed without issues');
}

export function pathId(request: FastifyRequest, name = 'id'): number {
  const value = (request.params as Record<string, string>)[name] ?? '';
  if (!/^\d{1,15}$/.test(value)) {
    throw badRequest('invalid_parameter', `${name} must be a positive integer`);
  }
  return Number(value);
}

export function queryInt(request: FastifyRequest, name: string): number | undefined {
  return queryId(request.query as Query, name);
}

/**
 * A yes/no query flag: true or 1, false or 0, or absent (false). Anything else is a 400: read
 * as false, `?hard=yes` soft-deleted what was asked to be gone for good, and said nothing.
 */
export function queryFlag(request: FastifyRequest, name: string): boolean {
  const value = queryParam(request.query as Query, name);
  if (value === undefined || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  return malformedParam(name, 'true or false', value);
}

export function recordType(request: FastifyRequest): string {
  const type = (request.params as Record<string, string>).type ?? '';
  if (!/^[a-z][a-z_]{0,39}$/.test(type)) {
    throw badRequest('invalid_parameter', 'type must be a record type name like lead');
  }
  return type;
}

export function definedOnly<T extends Record<string, unknown>>(
  value: T,
): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
