import type { Db } from './db.js';
import { hashSecret, randomToken } from './auth.js';
import { isPermission, PERMISSIONS } from './permissions.js';
import type { Clock } from './clock.js';

/** Businesses, users and integration keys: what the business's settings pages manage. */
export interface BusinessRow {
  id: number;
  name: string;
  time_zone: string;
  currency: string;
}
export interface UserRow {
  id: number;
  business_id: number;
  name: string;
  email: string;
  role: 'admin' | 'staff' | 'customer';
  permissions: string[];
}

function checkPermissions(permissions: readonly string[]): string[] {
  const unknown = permissions.filter((p) => !isPermission(p));
  if (unknown.length > 0) {
    throw new Error(
      `unknown permission(s): ${unknown.join(', ')}; allowed: ${PERMISSIONS.join(', ')}`,
    );
  }
  return [...new Set(permissions)];
}

export class Identity {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  createBusiness(input: { name: string; timeZone?: string; currency?: string }): BusinessRow {
    const info = this.db
      .prepare('INSERT INTO businesses (name, time_zone, currency, created_at) VALUES (?, ?, ?, ?)')
      .run(
        input.name,
        input.timeZone ?? 'America/New_York',
        input.currency ?? 'USD',
        this.clock.iso(),
      );
    return this.business(Number(info.lastInsertRowid));
  }

  business(id: number): BusinessRow {
    const row = this.db
      .prepare('SELECT id, name, time_zone, currency FROM businesses WHERE id = ?')
      .get(id) as BusinessRow | undefined;
    if (!row) throw new Error(`business ${id} does not exist`);
    return row;
  }

  setSuspended(businessId: number, suspended: boolean): void {
    this.db
      .prepare('UPDATE businesses SET suspended = ? WHERE id = ?')
      .run(suspended ? 1 : 0, businessId);
  }

  createUser(input: {
    businessId: number;
    name: string;
    email: string;
    role?: UserRow['role'];
    permissions?: readonly string[];
  }): UserRow {
    const permissions = checkPermissions(input.permissions ?? PERMISSIONS);
    const info = this.db
      .prepare(
        'INSERT INTO users (business_id, name, email, role, permissions, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(
        input.businessId,
        input.name,
        input.email,
        input.role ?? 'admin',
        JSON.stringify(permissions),
        this.clock.iso(),
      );
    return this.user(Number(info.lastInsertRowid));
  }

  user(id: number): UserRow {
    const row = this.db.prepare('SELECT * FROM users WHERE id = ?').get(id) as
      (Omit<UserRow, 'permissions'> & { permissions: string }) | undefined;
    if (!row) throw new Error(`user ${id} does not exist`);
    return { ...row, permissions: JSON.parse(row.permissions) as string[] };
  }

  usersOf(businessId: number): UserRow[] {
    const rows = this.db
      .prepare('SELECT id FROM users WHERE business_id = ? ORDER BY id')
      .all(businessId) as {
      id: number;
    }[];
    return rows.map((r) => this.user(r.id));
  }

  /**
   * Creates an integration key; the plaintext is returned once and only its hash is kept.
   * Its permissions may be narrower than its user's, never wider (checked on every call).
   */
  createKey(input: {
    userId: number;
    name?: string;
    permissions?: readonly string[];
    key?: string;
  }): {
    id: number;
    key: string;
  } {
    const user = this.user(input.userId);
    const key = input.key ?? randomToken('ik_', 24);
    if (!/^ik_[A-Za-z0-9_-]{8,}$/.test(key)) {
      throw new Error(
        'an integration key must start with ik_ followed by at least 8 letters, digits, _ or -',
      );
    }
    const permissions = checkPermissions(input.permissions ?? user.permissions);
    const info = this.db
      .prepare(
        'INSERT INTO api_keys (key_hash, key_hint, business_id, user_id, name, permissions, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        hashSecret(key),
        key.slice(-4),
        user.business_id,
        user.id,
        input.name ?? 'API key',
        JSON.stringify(permissions),
        this.clock.iso(),
      );
    return { id: Number(info.lastInsertRowid), key };
  }

  revokeKey(id: number): void {
    this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?').run(this.clock.iso(), id);
  }

  keys(businessId: number): {
    id: number;
    name: string;
    user_id: number;
    key_hint: string;
    permissions: string[];
    created_at: string;
    last_used_at: string | null;
    revoked_at: string | null;
  }[] {
    const rows = this.db
      .prepare(
        'SELECT id, name, user_id, key_hint, permissions, created_at, last_used_at, revoked_at FROM api_keys WHERE business_id = ? ORDER BY id',
      )
      .all(businessId) as { permissions: string }[];
    return rows.map((r) => ({
      ...r,
      permissions: JSON.parse(r.permissions) as string[],
    })) as ReturnType<Identity['keys']>;
  }
}

/** A user of this business (any role), or undefined: other businesses' users are invisible. */
export function findUser(
  db: Db,
  businessId: number,
  id: number,
): { id: number; name: string; email: string; role: string } | undefined {
  return db
    .prepare('SELECT id, name, email, role FROM users WHERE id = ? AND business_id = ?')
    .get(id, businessId) as { id: number; name: string; email: string; role: string } | undefined;
}
