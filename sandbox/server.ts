import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp, type ServerLimits } from './app.js';
import { hashSecret } from './auth.js';
import { Clock } from './clock.js';
import type { SandboxContext } from './context.js';
import { openDb, Records, type Db } from './db.js';
import { allHandlers } from './handlers.js';
import { Identity } from './identity.js';
import { PERMISSIONS } from './permissions.js';
import { createCatalog } from './resources/offerings.js';
import { sandboxCertificate } from './tls.js';
import { Counters, NO_FAULTS, RateLimiter } from './traffic.js';
import { OAuthServer } from './oauth.js';
import { WebhookDispatcher, type WebhookOptions } from './webhooks.js';
import { SandboxAdmin } from './admin.js';
import { adminPlugin } from './admin-routes.js';
import { seedBusiness, type SeedOptions, type SeedSummary } from './seed.js';

export interface SandboxOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  /**
   * Where to listen; 127.0.0.1 when absent. The sandbox does not judge host names: its caller
   * applies ebsync's one loopback rule (config/loopback.ts, which `ebsync sandbox` uses) and
   * says whether the host is beyond loopback. Such a host needs allowRemote, and HTTPS.
   */
  listen?: { host: string; remote: boolean };
  /**
   * Listen on a host that is not loopback. Off by default: the OAuth consent approves for
   * whoever reaches it and the admin token is the only guard, fine on one machine only.
   */
  allowRemote?: boolean;
  /** Request and idle timeouts and the connection cap (see DEFAULT_SERVER_LIMITS). */
  serverLimits?: Partial<ServerLimits>;
  /** SQLite file, or ':memory:' (default). */
  db?: string;
  /** Plain HTTP instead of HTTPS; only on a loopback host. */
  http?: boolean;
  /** Where the generated certificate is kept (default: a folder under the OS temp dir). */
  certDir?: string;
  /** Fixes the default business's full-permission key (otherwise random). */
  apiKey?: string;
  /** Requests per second per credential; 0 (default) = no limit. */
  rateLimit?: number;
  rateLimitMode?: '429' | '403';
  reachLimit?: number;
  maxPer?: number;
  accessTokenTtlSeconds?: number;
  /** Called with unexpected errors (which answer 500); tests fail on them. */
  onInternalError?: (error: unknown, route: string) => void;
  /** OAuth consent without the approve page (tests); the admin API can switch it too. */
  autoApprove?: boolean;
  /** Fixes the x-admin-token of the /admin API (otherwise random per instance). */
  adminToken?: string;
  /** Outgoing webhook retry and timeout settings (small values make tests fast). */
  webhooks?: Partial<WebhookOptions>;
  /**
   * Generated data (see sandbox/seed.ts), made only when the database is new: re-opening a
   * file that already holds a business adds nothing.
   */
  seed?: SeedOptions;
}

export interface Sandbox {
  /** Origin, e.g. https://127.0.0.1:8443 */
  url: string;
  /** {base_url}: origin + /api/v1/ */
  baseUrl: string;
  /** {auth_url}: the OAuth server's origin */
  authUrl: string;
  /** The default business's full-permission integration key. */
  apiKey: string;
  /** PEM to trust for HTTPS (undefined with http). */
  caFile: string | undefined;
  businessId: number;
  userId: number;
  ctx: SandboxContext;
  identity: Identity;
  app: FastifyInstance;
  /** In-process admin API (the /admin routes call the same object). */
  admin: SandboxAdmin;
  /** Value of the x-admin-token header the /admin routes require. */
  adminToken: string;
  /** What options.seed generated; undefined when nothing was (no seed, or an existing file). */
  seeded: SeedSummary | undefined;
  close(): Promise<void>;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const host = options.listen?.host ?? '127.0.0.1';
  const remote = options.listen?.remote ?? false;
  if (remote && !options.allowRemote) {
    throw new Error(
      `the sandbox listens on loopback only, not on ${host}: its OAuth consent authenticates nobody (allowRemote overrides)`,
    );
  }
  if (options.http && remote) {
    throw new Error(`plain HTTP is allowed only on loopback, not on ${host}`);
  }
  const db = openDb(options.db ?? ':memory:');
  try {
    return await startOn(db, host, options);
  } catch (error) {
    db.close();
    throw error;
  }
}

async function startOn(db: Db, host: string, options: SandboxOptions): Promise<Sandbox> {
  const clock = new Clock();
  const records = new Records(db, clock);
  const ctx: SandboxContext = {
    db,
    records,
    clock,
    limits: { maxPer: options.maxPer ?? 100, reachLimit: options.reachLimit ?? 10_000 },
    counters: new Counters(),
    rateLimiter: new RateLimiter({
      perSecond: options.rateLimit ?? 0,
      mode: options.rateLimitMode ?? '429',
    }),
    faults: { ...NO_FAULTS },
    accessTokenTtlSeconds: options.accessTokenTtlSeconds ?? 3600,
  };
  const identity = new Identity(db, clock);

  // The default business: reused when the database file already holds one. Made in one
  // transaction with its seed data, so a seed that fails or is interrupted leaves nothing
  // behind that a later start would take for data and not seed.
  const existing = db.prepare('SELECT id FROM businesses ORDER BY id LIMIT 1').get() as
    { id: number } | undefined;
  const { businessId, userId, seeded } = existing
    ? {
        businessId: existing.id,
        userId: (
          db
            .prepare('SELECT id FROM users WHERE business_id = ? ORDER BY id LIMIT 1')
            .get(existing.id) as { id: number }
        ).id,
        seeded: undefined,
      }
    : db.transaction(() => {
        const business = identity.createBusiness({ name: 'Sandbox Photo Booths' }).id;
        const owner = identity.createUser({
          businessId: business,
          name: 'Avery Owner',
          email: 'owner@sandbox.example',
          role: 'admin',
          permissions: PERMISSIONS,
        }).id;
        createCatalog(records, business);
        return {
          businessId: business,
          userId: owner,
          seeded: options.seed ? seedBusiness(ctx, business, owner, options.seed) : undefined,
        };
      })();
  const fixedKey = options.apiKey;
  const known =
    fixedKey !== undefined &&
    db.prepare('SELECT 1 FROM api_keys WHERE key_hash = ?').get(hashSecret(fixedKey)) !== undefined;
  const apiKey = known
    ? fixedKey
    : identity.createKey({
        userId,
        name: 'Sandbox full access',
        ...(fixedKey ? { key: fixedKey } : {}),
      }).key;

  const cert = options.http
    ? undefined
    : await sandboxCertificate(options.certDir ?? join(tmpdir(), 'ebsync-sandbox-cert'));
  const oauth = new OAuthServer(ctx, userId, { autoApprove: options.autoApprove ?? false });
  const webhooks = new WebhookDispatcher(ctx, options.webhooks);
  const admin = new SandboxAdmin({
    ctx,
    identity,
    oauth,
    webhooks,
    defaultBusinessId: businessId,
    defaultUserId: userId,
    token: options.adminToken,
  });
  const app = buildApp(ctx, allHandlers(), {
    plugins: [oauth.plugin(), adminPlugin(admin)],
    ...(cert ? { https: { key: cert.key, cert: cert.cert } } : {}),
    ...(options.serverLimits ? { limits: options.serverLimits } : {}),
    ...(options.onInternalError ? { onInternalError: options.onInternalError } : {}),
  });
  await app.listen({ port: options.port ?? 0, host });
  webhooks.start();
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const hostPart = isIP(host) === 6 ? `[${host}]` : host;
  const url = `${cert ? 'https' : 'http'}://${hostPart}:${port}`;
  return {
    url,
    baseUrl: `${url}/api/v1/`,
    authUrl: url,
    apiKey,
    caFile: cert?.caFile,
    businessId,
    userId,
    ctx,
    identity,
    app,
    admin,
    adminToken: admin.token,
    seeded,
    async close() {
      await webhooks.close();
      await app.close();
      db.close();
    },
  };
}
