import { createHash, randomBytes } from 'node:crypto';
import { sql, type Db } from './db.js';
import type { Clock } from './clock.js';
import { forbidden, unauthorized } from './errors.js';
import { PRICING_PERMISSIONS } from './permissions.js';

/** Who is calling: resolved from one of the three credential kinds of the spec. */
export interface Caller {
  kind: 'key' | 'oauth' | 'legacy';
  businessId: number;
  userId: number;
  role: string;
  permissions: ReadonlySet<string>;
  /** Rate limits and counters are kept per credential. */
  credential: string;
  appId?: number;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function randomToken(prefix: string, bytes = 24): string {
  return `${prefix}${randomBytes(bytes).toString('base64url')}`;
}

/**
 * A chosen admin token guards the whole /admin API (keys, grants, records), so it must be as
 * hard to guess as a generated one could reasonably be asked to be, and safe in a header.
 */
const ADMIN_TOKEN = /^[A-Za-z0-9._~-]{24,256}$/;
export const ADMIN_TOKEN_RULE = '24 to 256 letters, digits, _, -, . or ~';

/** Why a chosen admin token is refused, or undefined when it is fine. */
export function adminTokenProblem(token: string): string | undefined {
  return ADMIN_TOKEN.test(token) ? undefined : `expected ${ADMIN_TOKEN_RULE}`;
}

interface KeyRow {
  id: number;
  business_id: number;
  user_id: number;
  permissions: string;
  revoked_at: string | null;
  last_used_at: string | null;
}
/** A key's last use is written at most this often: not a write on every request. */
const LAST_USED_EVERY_MS = 60_000;
interface UserRow {
  id: number;
  role: string;
  permissions: string;
}
interface TokenRow {
  grant_id: number;
  expires_at: number | null;
  revoked_at: number | null;
}
interface GrantRow {
  id: number;
  app_id: number;
  business_id: number;
  user_id: number;
  scope: string;
  revoked_at: string | null;
}

function intersect(a: readonly string[], b: readonly string[]): Set<string> {
  const other = new Set(b);
  return new Set(a.filter((p) => other.has(p)));
}

function header(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Resolves the caller or throws 401/403 in the spec's shape. A key or token never carries
 * more than its user's permissions.
 */
export function authenticate(
  db: Db,
  clock: Clock,
  headers: Record<string, string | string[] | undefined>,
): Caller {
  const user = (id: number): UserRow => {
    const row = sql(db, 'SELECT id, role, permissions FROM users WHERE id = ?').get(id) as
      UserRow | undefined;
    if (!row)
      throw unauthorized('user_not_found', 'The user behind this credential no longer exists');
    return row;
  };
  const checkBusiness = (businessId: number): void => {
    const row = sql(db, 'SELECT suspended FROM businesses WHERE id = ?').get(businessId) as
      { suspended: number } | undefined;
    if (!row)
      throw unauthorized(
        'business_not_found',
        'The business behind this credential no longer exists',
      );
    if (row.suspended) throw forbidden('account_suspended', 'This account is suspended');
  };

  const authorization = header(headers, 'authorization');
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
    if (!match?.[1]) {
      throw unauthorized(
        'authorization_invalid',
        'The Authorization header must be "Bearer <access token>"',
      );
    }
    const token = sql(
      db,
      "SELECT grant_id, expires_at, revoked_at FROM oauth_tokens WHERE token_hash = ? AND kind = 'access'",
    ).get(hashSecret(match[1])) as TokenRow | undefined;
    if (!token) throw unauthorized('token_invalid', 'The access token is not valid');
    if (token.revoked_at !== null)
      throw unauthorized('token_revoked', 'The access token was revoked');
    if (token.expires_at !== null && token.expires_at <= clock.nowSeconds()) {
      throw unauthorized('token_expired', 'The access token has expired; refresh it');
    }
    const grant = sql(db, 'SELECT * FROM oauth_grants WHERE id = ?').get(token.grant_id) as
      GrantRow | undefined;
    if (!grant || grant.revoked_at !== null) {
      throw unauthorized(
        'app_disconnected',
        'The app was disconnected; the customer must connect again',
      );
    }
    checkBusiness(grant.business_id);
    const u = user(grant.user_id);
    return {
      kind: 'oauth',
      businessId: grant.business_id,
      userId: u.id,
      role: u.role,
      permissions: intersect(grant.scope.split(' '), JSON.parse(u.permissions) as string[]),
      credential: `grant:${grant.id}`,
      appId: grant.app_id,
    };
  }

  const apiKey = header(headers, 'api-key');
  if (apiKey !== undefined) {
    const key = sql(
      db,
      'SELECT id, business_id, user_id, permissions, revoked_at, last_used_at FROM api_keys WHERE key_hash = ?',
    ).get(hashSecret(apiKey.trim())) as KeyRow | undefined;
    if (!key) throw unauthorized('api_key_invalid', 'The API key is not valid');
    if (key.revoked_at !== null) throw unauthorized('api_key_revoked', 'The API key was revoked');
    checkBusiness(key.business_id);
    const now = clock.iso();
    if (
      key.last_used_at === null ||
      Date.parse(now) - Date.parse(key.last_used_at) >= LAST_USED_EVERY_MS
    ) {
      sql(db, 'UPDATE api_keys SET last_used_at = ? WHERE id = ?').run(now, key.id);
    }
    const u = user(key.user_id);
    return {
      kind: 'key',
      businessId: key.business_id,
      userId: u.id,
      role: u.role,
      permissions: intersect(
        JSON.parse(key.permissions) as string[],
        JSON.parse(u.permissions) as string[],
      ),
      credential: `key:${key.id}`,
    };
  }

  const appId = header(headers, 'app-id');
  const appSecret = header(headers, 'app-secret');
  if (appId !== undefined || appSecret !== undefined) {
    if (!appId || !appSecret) {
      throw unauthorized(
        'app_credentials_incomplete',
        'App-Id and App-Secret must be sent together',
      );
    }
    const app = sql(
      db,
      'SELECT id, legacy_secret_hash, permissions FROM oauth_apps WHERE legacy_app_id = ?',
    ).get(appId) as { id: number; legacy_secret_hash: string; permissions: string } | undefined;
    if (!app || app.legacy_secret_hash !== hashSecret(appSecret)) {
      throw unauthorized('app_credentials_invalid', 'The App-Id or App-Secret is not valid');
    }
    const franchise = header(headers, 'franchise-id');
    if (!franchise || !/^\d+$/.test(franchise)) {
      throw unauthorized(
        'franchise_id_missing',
        'Business-side calls with app credentials need a Franchise-Id header',
      );
    }
    const grant = sql(
      db,
      'SELECT * FROM oauth_grants WHERE app_id = ? AND business_id = ? AND revoked_at IS NULL ORDER BY id DESC',
    ).get(app.id, Number(franchise)) as GrantRow | undefined;
    if (!grant)
      throw unauthorized('app_not_installed', 'The app is not installed for this business');
    checkBusiness(grant.business_id);
    const u = user(grant.user_id);
    return {
      kind: 'legacy',
      businessId: grant.business_id,
      userId: u.id,
      role: u.role,
      permissions: intersect(
        JSON.parse(app.permissions) as string[],
        JSON.parse(u.permissions) as string[],
      ),
      credential: `app:${app.id}:${grant.business_id}`,
      appId: app.id,
    };
  }

  throw unauthorized('api_key_missing', 'Send an Api-Key header or an Authorization: Bearer token');
}

export function requirePermission(caller: Caller, anyOf: readonly string[] | null): void {
  if (anyOf === null) return;
  if (anyOf.some((p) => caller.permissions.has(p))) return;
  throw forbidden(
    'permission_denied',
    `This credential lacks the permission for this request (needs ${anyOf.join(' or ')})`,
  );
}

export function canReadPricing(caller: Caller): boolean {
  return PRICING_PERMISSIONS.some((p) => caller.permissions.has(p));
}
