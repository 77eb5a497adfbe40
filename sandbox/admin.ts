import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { adminTokenProblem, randomToken } from './auth.js';
import type { SandboxContext } from './context.js';
import type { StoredRecord } from './db.js';
import { badRequest, FieldErrors, notFound, unauthorized } from './errors.js';
import type { Identity } from './identity.js';
import type { GrantInfo, OAuthAppRow, OAuthServer, TokenResponse } from './oauth.js';
import { PERMISSIONS } from './permissions.js';
import type { FaultSettings } from './traffic.js';
import {
  WEBHOOK_RECORD_TYPES,
  webhookSecretProblem,
  type DeliveryAttempt,
  type WebhookDispatcher,
  type WebhookEndpoint,
} from './webhooks.js';

/**
 * The operator's side of the sandbox: what the service's staff screens and settings pages
 * would do, plus test switches (faults, rate limit, clock, counters). `SandboxAdmin` is the
 * in-process API; the HTTP routes under /admin (header x-admin-token) call it and answer the
 * same snake_case JSON its methods return. Lists answer `{ data: [...] }`.
 *
 * HTTP routes:
 *   POST   /admin/businesses              { name, time_zone?, currency?, owner?: { name, email } }
 *   GET    /admin/businesses
 *   PATCH  /admin/businesses/:id          { suspended }
 *   POST   /admin/users                   { business_id?, name, email, role?, permissions? }
 *   GET    /admin/users?business_id=
 *   POST   /admin/keys                    { user_id?, name?, permissions? } → plaintext key once
 *   GET    /admin/keys?business_id=
 *   DELETE /admin/keys/:id                revoke
 *   POST   /admin/apps                    { name, redirect_uris, permissions }
 *   GET    /admin/apps
 *   POST   /admin/apps/:id/install        { business_id?, user_id? } → tokens, no browser
 *   POST   /admin/apps/:id/uninstall      { business_id } → every grant of the app there
 *   GET    /admin/grants?app_id=&business_id=
 *   DELETE /admin/grants/:id              disconnect
 *   GET    /admin/oauth, PATCH /admin/oauth { auto_approve?, installing_user_id? }
 *   GET    /admin/records/:type/:id
 *   PATCH  /admin/records/:type/:id       { attributes: { … } } (through ctx.records.update)
 *   DELETE /admin/records/:type/:id       soft delete (?hard=true: gone for good)
 *   POST   /admin/webhooks                { url, business_id?, types?, secret? }
 *   GET    /admin/webhooks, DELETE /admin/webhooks/:id
 *   GET    /admin/webhooks/deliveries?endpoint_id=&limit=
 *   GET    /admin/faults, PATCH /admin/faults { error_rate?, error_statuses?, latency_ms?, drop_rate? },
 *   DELETE /admin/faults                  all off
 *   GET    /admin/rate-limit, PATCH /admin/rate-limit { per_second?, mode? }
 *   GET    /admin/counters, DELETE /admin/counters (reset)
 *   GET    /admin/clock, POST /admin/clock/advance { ms? , seconds? }
 */

export interface AdminDeps {
  ctx: SandboxContext;
  identity: Identity;
  oauth: OAuthServer;
  webhooks: WebhookDispatcher;
  defaultBusinessId: number;
  defaultUserId: number;
  /** Fixed admin token; random per instance otherwise. */
  token?: string | undefined;
}

export interface BusinessOut {
  id: number;
  name: string;
  time_zone: string;
  currency: string;
  suspended: boolean;
  created_at: string;
}

export interface RecordOut {
  type: string;
  id: number;
  business_id: number;
  parent_id: number | null;
  attributes: Record<string, unknown>;
  deleted_at: string | null;
}

export type InstallOut = TokenResponse & {
  grant_id: number;
  app_id: number;
  business_id: number;
  user_id: number;
};

export interface FaultsOut {
  error_rate: number;
  error_statuses: number[];
  latency_ms: number;
  drop_rate: number;
}

function recordOut(record: StoredRecord): RecordOut {
  return {
    type: record.type,
    id: record.id,
    business_id: record.businessId,
    parent_id: record.parentId,
    attributes: record.attrs,
    deleted_at: record.deletedAt,
  };
}

function validTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export class SandboxAdmin {
  readonly token: string;
  private readonly ctx: SandboxContext;

  constructor(private readonly deps: AdminDeps) {
    this.ctx = deps.ctx;
    const problem = deps.token === undefined ? undefined : adminTokenProblem(deps.token);
    if (problem) throw new Error(`the admin token is not allowed: ${problem}`);
    this.token = deps.token ?? randomToken('adm_', 24);
  }

  // Businesses and users

  createBusiness(input: {
    name: string;
    timeZone?: string;
    currency?: string;
    owner?: { name: string; email: string };
  }): { business: BusinessOut; owner: ReturnType<Identity['user']> } {
    const created = this.deps.identity.createBusiness({
      name: input.name,
      ...(input.timeZone !== undefined ? { timeZone: input.timeZone } : {}),
      ...(input.currency !== undefined ? { currency: input.currency } : {}),
    });
    // A business without a user could hold no key; the service always has an owner.
    const owner = this.deps.identity.createUser({
      businessId: created.id,
      name: input.owner?.name ?? `${input.name} Owner`,
      email: input.owner?.email ?? `owner+${created.id}@sandbox.example`,
      role: 'admin',
      permissions: PERMISSIONS,
    });
    return { business: this.business(created.id), owner };
  }

  business(id: number): BusinessOut {
    const row = this.ctx.db
      .prepare(
        'SELECT id, name, time_zone, currency, suspended, created_at FROM businesses WHERE id = ?',
      )
      .get(id) as (Omit<BusinessOut, 'suspended'> & { suspended: number }) | undefined;
    if (!row) throw notFound('Business', id);
    return { ...row, suspended: row.suspended === 1 };
  }

  businesses(): BusinessOut[] {
    const ids = this.ctx.db.prepare('SELECT id FROM businesses ORDER BY id').all() as {
      id: number;
    }[];
    return ids.map((r) => this.business(r.id));
  }

  setSuspended(businessId: number, suspended: boolean): BusinessOut {
    this.business(businessId);
    this.deps.identity.setSuspended(businessId, suspended);
    return this.business(businessId);
  }

  createUser(input: {
    businessId?: number;
    name: string;
    email: string;
    role?: 'admin' | 'staff' | 'customer';
    permissions?: readonly string[];
  }): ReturnType<Identity['user']> {
    const businessId = input.businessId ?? this.deps.defaultBusinessId;
    this.business(businessId);
    return this.deps.identity.createUser({ ...input, businessId });
  }

  user(id: number): ReturnType<Identity['user']> {
    const exists = this.ctx.db.prepare('SELECT 1 FROM users WHERE id = ?').get(id);
    if (!exists) throw notFound('User', id);
    return this.deps.identity.user(id);
  }

  users(businessId?: number): ReturnType<Identity['user']>[] {
    if (businessId !== undefined) {
      this.business(businessId);
      return this.deps.identity.usersOf(businessId);
    }
    return this.businesses().flatMap((b) => this.deps.identity.usersOf(b.id));
  }

  // Integration keys

  /** The plaintext key is in this answer only. */
  createKey(input: { userId?: number; name?: string; permissions?: readonly string[] }): {
    id: number;
    key: string;
    user_id: number;
    business_id: number;
    permissions: string[];
  } {
    const user = this.user(input.userId ?? this.deps.defaultUserId);
    const permissions = [...new Set(input.permissions ?? user.permissions)];
    const wider = permissions.filter((p) => !user.permissions.includes(p));
    if (wider.length > 0) {
      new FieldErrors()
        .add('permissions', `exceed the user's permissions: ${wider.join(', ')}`)
        .throwIfAny();
    }
    const created = this.deps.identity.createKey({
      userId: user.id,
      permissions,
      ...(input.name !== undefined ? { name: input.name } : {}),
    });
    return { ...created, user_id: user.id, business_id: user.business_id, permissions };
  }

  keys(businessId?: number): ReturnType<Identity['keys']> {
    if (businessId !== undefined) {
      this.business(businessId);
      return this.deps.identity.keys(businessId);
    }
    return this.businesses().flatMap((b) => this.deps.identity.keys(b.id));
  }

  revokeKey(id: number): void {
    const row = this.ctx.db.prepare('SELECT 1 FROM api_keys WHERE id = ?').get(id);
    if (!row) throw notFound('Key', id);
    this.deps.identity.revokeKey(id);
  }

  // OAuth apps and grants

  /** Returns client_id plus the legacy App-Id and (only here) App-Secret. */
  createApp(input: {
    name: string;
    redirectUris: readonly string[];
    permissions: readonly string[];
  }): OAuthAppRow & { legacy_app_secret: string } {
    return this.deps.oauth.createApp(input);
  }

  apps(): OAuthAppRow[] {
    return this.deps.oauth.apps();
  }

  app(id: number): OAuthAppRow {
    const app = this.deps.oauth.app(id);
    if (!app) throw notFound('App', id);
    return app;
  }

  /**
   * Installs an app as if the customer approved it, and returns the tokens the code
   * exchange would. The installing user: userId, else businessId's first admin, else the
   * OAuth server's installing user (admin setting or default owner).
   */
  install(input: { appId: number; businessId?: number; userId?: number }): InstallOut {
    const app = this.app(input.appId);
    let userId: number;
    if (input.userId !== undefined) {
      const user = this.user(input.userId);
      if (input.businessId !== undefined && user.business_id !== input.businessId) {
        new FieldErrors().add('user_id', 'does not belong to the business').throwIfAny();
      }
      userId = user.id;
    } else if (input.businessId !== undefined) {
      this.business(input.businessId);
      const row = this.ctx.db
        .prepare(
          "SELECT id FROM users WHERE business_id = ? ORDER BY role = 'admin' DESC, id LIMIT 1",
        )
        .get(input.businessId) as { id: number } | undefined;
      if (!row) throw notFound('User of business', input.businessId);
      userId = row.id;
    } else {
      userId = this.deps.oauth.installingUser(undefined) ?? this.deps.defaultUserId;
    }
    const grant = this.deps.oauth.createGrant(app, userId);
    this.ctx.counters.tokenGrants += 1;
    return {
      grant_id: grant.id,
      app_id: app.id,
      business_id: grant.business_id,
      user_id: grant.user_id,
      ...this.deps.oauth.issueTokens(grant),
    };
  }

  grants(filter: { appId?: number; businessId?: number } = {}): GrantInfo[] {
    return this.deps.oauth.grants(filter);
  }

  /** The customer disconnects: the grant's tokens answer 401 app_disconnected from now on. */
  disconnect(grantId: number): GrantInfo {
    const grant = this.deps.oauth.grant(grantId);
    if (!grant) throw notFound('Grant', grantId);
    this.deps.oauth.revokeGrant(grantId, 'disconnected');
    return this.deps.oauth.grant(grantId) ?? grant;
  }

  /** Uninstalls an app from a business: every live grant goes. */
  uninstall(input: { appId: number; businessId: number }): GrantInfo[] {
    this.app(input.appId);
    this.business(input.businessId);
    return this.grants(input)
      .filter((g) => g.revoked_at === null)
      .map((g) => this.disconnect(g.id));
  }

  oauthSettings(): { auto_approve: boolean; installing_user_id: number | null } {
    const s = this.deps.oauth.settings;
    return { auto_approve: s.autoApprove, installing_user_id: s.installingUserId };
  }

  setOAuthSettings(input: { autoApprove?: boolean; installingUserId?: number | null }) {
    if (input.installingUserId !== undefined && input.installingUserId !== null) {
      this.user(input.installingUserId);
    }
    if (input.autoApprove !== undefined) this.deps.oauth.settings.autoApprove = input.autoApprove;
    if (input.installingUserId !== undefined) {
      this.deps.oauth.settings.installingUserId = input.installingUserId;
    }
    return this.oauthSettings();
  }

  // Records, changed as staff would (so change notifications and webhooks fire)

  private stored(type: string, id: number, includeDeleted = false): StoredRecord {
    const row = this.ctx.db
      .prepare('SELECT business_id FROM records WHERE type = ? AND id = ?')
      .get(type, id) as { business_id: number } | undefined;
    const record = row
      ? this.ctx.records.get(type, row.business_id, id, { includeDeleted })
      : undefined;
    if (!record) throw notFound(type, id);
    return record;
  }

  record(type: string, id: number): RecordOut {
    return recordOut(this.stored(type, id, true));
  }

  patchRecord(type: string, id: number, attributes: Record<string, unknown>): RecordOut {
    if ('id' in attributes && attributes.id !== id) {
      new FieldErrors().add('id', 'cannot be changed').throwIfAny();
    }
    return recordOut(this.ctx.records.update(this.stored(type, id), attributes));
  }

  deleteRecord(type: string, id: number, options: { hard?: boolean } = {}): void {
    const record = this.stored(type, id, options.hard === true);
    if (options.hard) this.ctx.records.hardDelete(record);
    else this.ctx.records.softDelete(record, this.ctx.clock.iso());
  }

  // Webhooks

  addWebhook(input: {
    url: string;
    businessId?: number;
    types?: readonly string[] | null;
    secret?: string;
  }): WebhookEndpoint {
    const businessId = input.businessId ?? this.deps.defaultBusinessId;
    this.business(businessId);
    return this.deps.webhooks.addEndpoint({ ...input, businessId });
  }

  webhooks(businessId?: number): WebhookEndpoint[] {
    return this.deps.webhooks.endpoints(businessId);
  }

  deleteWebhook(id: number): void {
    if (!this.deps.webhooks.deleteEndpoint(id)) throw notFound('Webhook endpoint', id);
  }

  deliveries(filter: { endpointId?: number; limit?: number } = {}): DeliveryAttempt[] {
    return this.deps.webhooks.deliveries(filter);
  }

  /** Waits until no webhook delivery is queued or retrying. */
  webhooksIdle(): Promise<void> {
    return this.deps.webhooks.idle();
  }

  // Traffic switches

  faults(): FaultsOut {
    const f = this.ctx.faults;
    return {
      error_rate: f.errorRate,
      error_statuses: [...f.errorStatuses],
      latency_ms: f.latencyMs,
      drop_rate: f.dropRate,
    };
  }

  /** Changes ctx.faults in place: the API reads it on every request. */
  setFaults(input: Partial<FaultSettings>): FaultsOut {
    const f = this.ctx.faults;
    if (input.errorRate !== undefined) f.errorRate = input.errorRate;
    if (input.errorStatuses !== undefined) f.errorStatuses = [...input.errorStatuses];
    if (input.latencyMs !== undefined) f.latencyMs = input.latencyMs;
    if (input.dropRate !== undefined) f.dropRate = input.dropRate;
    return this.faults();
  }

  clearFaults(): FaultsOut {
    return this.setFaults({ errorRate: 0, latencyMs: 0, dropRate: 0 });
  }

  rateLimit(): { per_second: number; mode: '429' | '403' } {
    const s = this.ctx.rateLimiter.settings;
    return { per_second: s.perSecond, mode: s.mode };
  }

  setRateLimit(input: { perSecond?: number; mode?: '429' | '403' }) {
    const s = this.ctx.rateLimiter.settings;
    if (input.perSecond !== undefined) s.perSecond = input.perSecond;
    if (input.mode !== undefined) s.mode = input.mode;
    return this.rateLimit();
  }

  counters(): ReturnType<SandboxContext['counters']['snapshot']> {
    return this.ctx.counters.snapshot();
  }

  resetCounters(): ReturnType<SandboxContext['counters']['snapshot']> {
    this.ctx.counters.reset();
    return this.counters();
  }

  clock(): { now: string } {
    return { now: this.ctx.clock.iso() };
  }

  /** Moves the sandbox clock (token and code expiry), not timers. */
  advanceClock(ms: number): { now: string } {
    this.ctx.clock.advance(ms);
    return this.clock();
  }

  /** Mounts the HTTP routes under /admin. */
  plugin(): (app: FastifyInstance) => void {
    return (root) => {
      void root.register(
        (app, _opts, done) => {
          registerRoutes(app, this);
          done();
        },
        { prefix: '/admin' },
      );
    };
  }

  /** Constant-time check of an x-admin-token header value. */
  accepts(token: string): boolean {
    const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
    return timingSafeEqual(digest(token), digest(this.token));
  }
}

// HTTP layer: validation with zod, answers in the spec's error shapes.

const permission = z.enum(PERMISSIONS);
const permissionList = z.array(permission);
const id = z.number().int().positive();
const httpUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.hash === '';
  } catch {
    return false;
  }
}, 'must be an absolute http(s) URL without a fragment');

const schemas = {
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
    error_rate: z.number().min(0).max(1).optional(),
    error_statuses: z
      .array(z.union([z.literal(500), z.literal(502), z.literal(503)]))
      .min(1)
      .optional(),
    latency_ms: z.number().int().min(0).max(60_000).optional(),
    drop_rate: z.number().min(0).max(1).optional(),
  }),
  rateLimit: z.object({
    per_second: z.number().int().min(0).optional(),
    mode: z
      .union([z.literal('429'), z.literal('403'), z.literal(429), z.literal(403)])
      .transform((m) => String(m) as '429' | '403')
      .optional(),
  }),
  clock: z
    .object({
      ms: z.number().int().min(0).optional(),
      seconds: z.number().min(0).optional(),
    })
    .refine((v) => v.ms !== undefined || v.seconds !== undefined, {
      message: "can't be blank",
      path: ['ms'],
    }),
};

function valueAt(body: unknown, path: readonly PropertyKey[]): unknown {
  let value: unknown = body;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** Parses an admin body; 400 when it is not an object, 422 with per-field messages otherwise. */
function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const input = body === undefined || body === null ? {} : body;
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw badRequest('invalid_body', 'The request body must be a JSON object');
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const errors = new FieldErrors();
  for (const issue of result.error.issues) {
    const field = issue.path.map(String).join('.') || 'base';
    const missing = valueAt(input, issue.path) === undefined;
    const message =
      missing || issue.message === "can't be blank"
        ? "can't be blank"
        : issue.code === 'invalid_type'
          ? `must be ${issue.expected === 'array' ? 'an' : 'a'} ${issue.expected}`
          : issue.code === 'custom' || issue.message.startsWith('must ')
            ? issue.message
            : `is invalid (${issue.message})`;
    errors.add(field, message);
  }
  errors.throwIfAny();
  throw new Error('unreachable: zod failed without issues');
}

function pathId(request: FastifyRequest, name = 'id'): number {
  const value = (request.params as Record<string, string>)[name] ?? '';
  if (!/^\d{1,15}$/.test(value)) {
    throw badRequest('invalid_parameter', `${name} must be a positive integer`);
  }
  return Number(value);
}

function queryInt(request: FastifyRequest, name: string): number | undefined {
  const value = (request.query as Record<string, unknown>)[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) {
    throw badRequest('invalid_parameter', `${name} must be a positive integer`);
  }
  return Number(value);
}

function recordType(request: FastifyRequest): string {
  const type = (request.params as Record<string, string>).type ?? '';
  if (!/^[a-z][a-z_]{0,39}$/.test(type)) {
    throw badRequest('invalid_parameter', 'type must be a record type name like lead');
  }
  return type;
}

function definedOnly<T extends Record<string, unknown>>(
  value: T,
): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

function registerRoutes(app: FastifyInstance, admin: SandboxAdmin): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.headers['x-admin-token'];
    const token = Array.isArray(header) ? header[0] : header;
    if (token === undefined) {
      done(unauthorized('admin_token_missing', 'Send the x-admin-token header'));
      return;
    }
    if (!admin.accepts(token)) {
      done(unauthorized('admin_token_invalid', 'The x-admin-token is not valid'));
      return;
    }
    done();
  });

  app.get('/', () => ({
    business_id: admin.businesses()[0]?.id ?? null,
    clock: admin.clock().now,
    oauth: admin.oauthSettings(),
    faults: admin.faults(),
    rate_limit: admin.rateLimit(),
  }));

  app.post('/businesses', (request, reply) => {
    const body = parseBody(schemas.business, request.body);
    return reply.code(201).send(
      admin.createBusiness({
        name: body.name,
        ...definedOnly({ timeZone: body.time_zone, currency: body.currency, owner: body.owner }),
      }),
    );
  });
  app.get('/businesses', () => ({ data: admin.businesses() }));
  app.patch('/businesses/:id', (request) =>
    admin.setSuspended(pathId(request), parseBody(schemas.businessPatch, request.body).suspended),
  );

  app.post('/users', (request, reply) => {
    const body = parseBody(schemas.user, request.body);
    return reply.code(201).send(
      admin.createUser({
        name: body.name,
        email: body.email,
        ...definedOnly({
          businessId: body.business_id,
          role: body.role,
          permissions: body.permissions,
        }),
      }),
    );
  });
  app.get('/users', (request) => ({ data: admin.users(queryInt(request, 'business_id')) }));

  app.post('/keys', (request, reply) => {
    const body = parseBody(schemas.key, request.body);
    return reply
      .code(201)
      .send(
        admin.createKey(
          definedOnly({ userId: body.user_id, name: body.name, permissions: body.permissions }),
        ),
      );
  });
  app.get('/keys', (request) => ({ data: admin.keys(queryInt(request, 'business_id')) }));
  app.delete('/keys/:id', (request) => {
    admin.revokeKey(pathId(request));
    return { revoked: true };
  });

  app.post('/apps', (request, reply) => {
    const body = parseBody(schemas.app, request.body);
    return reply.code(201).send(
      admin.createApp({
        name: body.name,
        redirectUris: body.redirect_uris,
        permissions: body.permissions,
      }),
    );
  });
  app.get('/apps', () => ({ data: admin.apps() }));
  app.post('/apps/:id/install', (request, reply) => {
    const body = parseBody(schemas.install, request.body);
    return reply.code(201).send(
      admin.install({
        appId: pathId(request),
        ...definedOnly({ businessId: body.business_id, userId: body.user_id }),
      }),
    );
  });
  app.post('/apps/:id/uninstall', (request) => {
    const body = parseBody(schemas.uninstall, request.body);
    return { data: admin.uninstall({ appId: pathId(request), businessId: body.business_id }) };
  });
  app.get('/grants', (request) => ({
    data: admin.grants(
      definedOnly({
        appId: queryInt(request, 'app_id'),
        businessId: queryInt(request, 'business_id'),
      }),
    ),
  }));
  app.delete('/grants/:id', (request) => admin.disconnect(pathId(request)));
  app.get('/oauth', () => admin.oauthSettings());
  app.patch('/oauth', (request) => {
    const body = parseBody(schemas.oauth, request.body);
    return admin.setOAuthSettings(
      definedOnly({ autoApprove: body.auto_approve, installingUserId: body.installing_user_id }),
    );
  });

  app.get('/records/:type/:id', (request) => admin.record(recordType(request), pathId(request)));
  app.patch('/records/:type/:id', (request) => {
    const type = recordType(request);
    const recordId = pathId(request);
    const body = parseBody(schemas.recordPatch, request.body);
    return admin.patchRecord(type, recordId, body.attributes);
  });
  app.delete('/records/:type/:id', (request) => {
    const hard = (request.query as Record<string, unknown>).hard;
    admin.deleteRecord(recordType(request), pathId(request), {
      hard: hard === 'true' || hard === '1',
    });
    return { deleted: true };
  });

  app.post('/webhooks', (request, reply) => {
    const body = parseBody(schemas.webhook, request.body);
    return reply.code(201).send(
      admin.addWebhook({
        url: body.url,
        ...definedOnly({ businessId: body.business_id, types: body.types, secret: body.secret }),
      }),
    );
  });
  app.get('/webhooks', (request) => ({ data: admin.webhooks(queryInt(request, 'business_id')) }));
  app.get('/webhooks/deliveries', (request) => ({
    data: admin.deliveries(
      definedOnly({
        endpointId: queryInt(request, 'endpoint_id'),
        limit: queryInt(request, 'limit'),
      }),
    ),
  }));
  app.delete('/webhooks/:id', (request) => {
    admin.deleteWebhook(pathId(request));
    return { deleted: true };
  });

  app.get('/faults', () => admin.faults());
  app.patch('/faults', (request) => {
    const body = parseBody(schemas.faults, request.body);
    return admin.setFaults(
      definedOnly({
        errorRate: body.error_rate,
        errorStatuses: body.error_statuses,
        latencyMs: body.latency_ms,
        dropRate: body.drop_rate,
      }),
    );
  });
  app.delete('/faults', () => admin.clearFaults());

  app.get('/rate-limit', () => admin.rateLimit());
  app.patch('/rate-limit', (request) => {
    const body = parseBody(schemas.rateLimit, request.body);
    return admin.setRateLimit(definedOnly({ perSecond: body.per_second, mode: body.mode }));
  });

  app.get('/counters', () => admin.counters());
  app.delete('/counters', () => admin.resetCounters());

  app.get('/clock', () => admin.clock());
  app.post('/clock/advance', (request) => {
    const body = parseBody(schemas.clock, request.body);
    return admin.advanceClock(body.ms ?? Math.round((body.seconds ?? 0) * 1000));
  });
}
