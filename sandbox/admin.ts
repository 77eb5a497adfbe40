import { createHash, timingSafeEqual } from 'node:crypto';
import { adminTokenProblem, randomToken } from './auth.js';
import type { SandboxContext } from './context.js';
import { sql, type StoredRecord } from './db.js';
import { FieldErrors, generalError, notFound } from './errors.js';
import type { Identity } from './identity.js';
import type { GrantInfo, OAuthAppRow, OAuthServer, TokenResponse } from './oauth.js';
import { PERMISSIONS } from './permissions.js';
import type { FaultSettings } from './traffic.js';
import { checkRecordPatch } from './record-patch.js';
import { checkLeadBookingEdit } from './resources/lead-bookings-input.js';
import type { LeadBookingAttrs } from './resources/lead-bookings-model.js';
import type { DeliveryAttempt, WebhookDispatcher, WebhookEndpoint } from './webhooks.js';

/** The sandbox clock stays before this (9999-01-01): its ISO times keep four-digit years. */
const CLOCK_END_MS = Date.UTC(9999, 0, 1);

/**
 * The operator's side of the sandbox: what the service's staff screens and settings pages
 * would do, plus test switches (faults, rate limit, clock, counters). `SandboxAdmin` is the
 * in-process API; the HTTP routes under /admin (admin-routes.ts) call it and answer the
 * same snake_case JSON its methods return. Lists answer `{ data: [...] }`.
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
    const row = sql(this.ctx.db, 'SELECT business_id FROM records WHERE type = ? AND id = ?').get(
      type,
      id,
    ) as { business_id: number } | undefined;
    const record = row
      ? this.ctx.records.get(type, row.business_id, id, { includeDeleted })
      : undefined;
    if (record) return record;
    // `leads` for `lead`: "leads 10 was not found" of a lead that exists read as a lost record.
    const types = (
      sql(this.ctx.db, 'SELECT DISTINCT type FROM records ORDER BY type').all() as {
        type: string;
      }[]
    ).map((r) => r.type);
    if (!types.includes(type)) {
      throw generalError(
        404,
        'not_found',
        'record_type_not_found',
        `this sandbox holds no records of type '${type}'; its types: ${types.join(', ')}`,
      );
    }
    throw notFound(type, id);
  }

  record(type: string, id: number): RecordOut {
    return recordOut(this.stored(type, id, true));
  }

  patchRecord(type: string, id: number, attributes: Record<string, unknown>): RecordOut {
    const record = this.stored(type, id);
    checkRecordPatch(type, id, record.attrs, attributes);
    if (type === 'lead_booking') {
      checkLeadBookingEdit(this.ctx, record as StoredRecord<LeadBookingAttrs>, attributes);
    }
    // An event's custom title is no attribute the API serves: it overrides the title, as it
    // does when the event is made (POST /events). Alone it changed nothing a client saw.
    const title = type === 'event' ? attributes.custom_title : undefined;
    const change =
      typeof title === 'string' && title !== '' && !('title' in attributes)
        ? { ...attributes, title }
        : attributes;
    return recordOut(this.ctx.records.update(record, change));
  }

  deleteRecord(type: string, id: number, options: { hard?: boolean } = {}): void {
    const record = this.stored(type, id, options.hard === true);
    // An event's bookings go with it: the API stops serving them (a booking is visible only
    // through its live event), so they are deleted too, each delivered as its own
    // event_booking.deleted, and a webhook-driven mirror drops them as a full pass would.
    const children = type === 'event' ? this.ctx.records.children('event_booking', record.id) : [];
    const at = this.ctx.clock.iso();
    for (const target of [...children, record]) {
      if (options.hard) this.ctx.records.hardDelete(target);
      else this.ctx.records.softDelete(target, at);
    }
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
    // Every time the sandbox serves is a four-digit year, as the spec's timestamps are.
    if (this.ctx.clock.now() + ms >= CLOCK_END_MS) {
      const errors = new FieldErrors();
      errors.add('ms', 'must keep the clock before 9999-01-01');
      errors.throwIfAny();
    }
    this.ctx.clock.advance(ms);
    return this.clock();
  }

  /** Mounts the HTTP routes under /admin. */
  /** Constant-time check of an x-admin-token header value. */
  accepts(token: string): boolean {
    const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
    return timingSafeEqual(digest(token), digest(this.token));
  }
}
