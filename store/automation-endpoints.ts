import type { PayloadCodec } from '@temporalio/common';
import { openSqliteFile } from './sqlite-files.js';
import { bindSealedRows, openValue, sealedRowName, sealValue } from './sealed-values.js';

/** Which changes an endpoint wants: empty lists mean every one. */
export interface EndpointFilters {
  /** Mirrored tables (`leads`, `event_bookings`, …). */
  resources: string[];
  /** `written` or `deleted`. */
  actions: string[];
  /** Connection names. */
  connections: string[];
}

/** A user's automation endpoint. URL and secret are sealed at rest (URLs of hooks carry tokens). */
export interface AutomationEndpoint {
  name: string;
  url: string;
  /** `whsec_…`: the Standard Webhooks signing secret. */
  secret: string;
  filters: EndpointFilters;
  createdAt: string;
  /** Set when the endpoint answered 410 Gone: nothing more is sent to it. */
  disabledAt: string | null;
  disabledReason: string | null;
  /**
   * Why this process's mode sends it nothing (plain http:// in production): worked out when
   * the endpoints are read, never stored, so development sends to it again.
   */
  refusedReason?: string;
  /**
   * Why its URL and secret cannot be opened here (sealed with keys this process lacks); they
   * are empty then, and nothing is sent to it.
   */
  unreadable?: string;
}

/** Whether changes go to the endpoint: readable, neither disabled nor refused by this mode. */
export function sendsTo(endpoint: AutomationEndpoint): boolean {
  return (
    endpoint.disabledAt === null &&
    endpoint.refusedReason === undefined &&
    endpoint.unreadable === undefined
  );
}

export interface BreakerState {
  /** Consecutive failed attempts. */
  failures: number;
  /** Epoch ms until which the breaker is open; 0 when closed. */
  openUntil: number;
}

export type DeliveryStatus = 'delivered' | 'failed' | 'rejected' | 'gone' | 'breaker_open';

export interface DeliveryLogEntry {
  webhookId: string;
  endpoint: string;
  connectionId: string;
  resource: string;
  recordId: string;
  action: string;
  status: DeliveryStatus;
  httpStatus: number | null;
  /**
   * Why an attempt got no answer (`connection refused, nothing listens there (ECONNREFUSED)`),
   * in words without the endpoint's address; null when it answered (httpStatus says how).
   */
  reason: string | null;
  attempts: number;
  at: string;
}

export interface AutomationStore {
  add(endpoint: AutomationEndpoint): Promise<boolean>;
  list(): Promise<AutomationEndpoint[]>;
  remove(name: string): boolean;
  disable(name: string, reason: string): void;
  /** Sends to a disabled endpoint again, same URL and secret, its breaker closed; false if none. */
  enable(name: string): boolean;
  breaker(name: string): BreakerState;
  /**
   * May an attempt go to the endpoint now? Closed: yes. Open: no. Open past its time: one
   * caller (across every worker sharing this file) gets the probe, the others wait.
   */
  admit(name: string, now: number, openMs: number): boolean;
  /** An attempt failed: the breaker opens at `threshold` consecutive failures. */
  failed(name: string, now: number, threshold: number, openMs: number): BreakerState;
  succeeded(name: string): void;
  /** The delivery's latest state; `delivered` ones are not sent again. */
  logged(webhookId: string, endpoint: string): DeliveryLogEntry | undefined;
  log(entry: DeliveryLogEntry): void;
  deliveries(options: { endpoint?: string; limit: number }): DeliveryLogEntry[];
  close(): void;
}

interface LogRow {
  webhook_id: string;
  endpoint: string;
  connection_id: string;
  resource: string;
  record_id: string;
  action: string;
  status: DeliveryStatus;
  http_status: number | null;
  reason: string | null;
  attempts: number;
  at: number;
}

function entryOf(row: LogRow): DeliveryLogEntry {
  return {
    webhookId: row.webhook_id,
    endpoint: row.endpoint,
    connectionId: row.connection_id,
    resource: row.resource,
    recordId: row.record_id,
    action: row.action,
    status: row.status,
    httpStatus: row.http_status,
    reason: row.reason,
    attempts: row.attempts,
    at: new Date(row.at).toISOString(),
  };
}

/**
 * Endpoints, their circuit breakers and the delivery log in the data dir's `webhooks.db`,
 * beside the registrations. The breaker lives here rather than in worker memory so that every
 * worker on the machine sees the same state: one endpoint down opens it for all of them, and a
 * half-open probe is granted to one worker by a single UPDATE.
 */
/**
 * Why an http:// endpoint is sent nothing where only HTTPS is allowed (production). An earlier
 * version stored it as the endpoint's disabled reason; `endpoints enable` in development
 * clears that.
 */
export const PLAIN_HTTP_REFUSED =
  'plain http:// is refused in production mode, even on loopback; add it again with https://';

export interface AutomationStoreOptions {
  /**
   * Production: changes (customer records) go over HTTPS only. An http:// endpoint (added
   * in development) is listed refused, with the reason, and nothing is stored: reading
   * changes nothing.
   */
  httpsOnly?: boolean;
  /**
   * How long the delivery log keeps an entry (the worker gives EBSYNC_WEBHOOK_DEDUPE_WINDOW,
   * after which the change itself is pruned from the outbox and can no longer be sent).
   * Each entry logged prunes a few older than this; unset, nothing is pruned.
   */
  logRetentionMs?: number;
}

/** Entries older than the retention one log() deletes at most: more than it adds. */
const LOG_PRUNE_BATCH = 16;

export function sqliteAutomationStore(
  file: string,
  codec: PayloadCodec,
  options: AutomationStoreOptions = {},
): AutomationStore {
  const db = openSqliteFile(file, 5_000);
  db.exec(`
    CREATE TABLE IF NOT EXISTS automation_endpoints (
      name TEXT PRIMARY KEY, sealed BLOB NOT NULL, filters TEXT NOT NULL, created_at INTEGER NOT NULL,
      disabled_at INTEGER, disabled_reason TEXT,
      failures INTEGER NOT NULL DEFAULT 0, open_until INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE IF NOT EXISTS automation_deliveries (
      webhook_id TEXT NOT NULL, endpoint TEXT NOT NULL, connection_id TEXT NOT NULL,
      resource TEXT NOT NULL, record_id TEXT NOT NULL, action TEXT NOT NULL, status TEXT NOT NULL,
      http_status INTEGER, attempts INTEGER NOT NULL, at INTEGER NOT NULL, reason TEXT,
      PRIMARY KEY (webhook_id, endpoint));
    CREATE INDEX IF NOT EXISTS automation_deliveries_at ON automation_deliveries (at);`);
  // A log kept by an earlier version has no reasons: its rows show none.
  const logColumns = db.prepare<[], { name: string }>(
    "SELECT name FROM pragma_table_info('automation_deliveries')",
  );
  if (!logColumns.all().some((c) => c.name === 'reason')) {
    db.exec('ALTER TABLE automation_deliveries ADD COLUMN reason TEXT');
  }
  interface EndpointRow {
    name: string;
    sealed: Buffer;
    filters: string;
    created_at: number;
    disabled_at: number | null;
    disabled_reason: string | null;
  }
  const all = db.prepare<[], EndpointRow>('SELECT * FROM automation_endpoints ORDER BY name');
  const insert = db.prepare(
    'INSERT OR IGNORE INTO automation_endpoints (name, sealed, filters, created_at) VALUES (?, ?, ?, ?)',
  );
  const breakerOf = db.prepare<[string], { failures: number; open_until: number }>(
    'SELECT failures, open_until FROM automation_endpoints WHERE name = ?',
  );
  const probe = db.prepare(
    'UPDATE automation_endpoints SET open_until = ? WHERE name = ? AND open_until > 0 AND open_until <= ?',
  );
  const fail = db.prepare(
    'UPDATE automation_endpoints SET failures = failures + 1 WHERE name = ? RETURNING failures',
  );
  const open = db.prepare('UPDATE automation_endpoints SET open_until = ? WHERE name = ?');
  const reset = db.prepare(
    'UPDATE automation_endpoints SET failures = 0, open_until = 0 WHERE name = ?',
  );
  const selectLog = db.prepare<[string, string], LogRow>(
    'SELECT * FROM automation_deliveries WHERE webhook_id = ? AND endpoint = ?',
  );
  const upsertLog = db.prepare(`INSERT OR REPLACE INTO automation_deliveries
    (webhook_id, endpoint, connection_id, resource, record_id, action, status, http_status, reason, attempts, at)
    VALUES (@webhookId, @endpoint, @connectionId, @resource, @recordId, @action, @status, @httpStatus, @reason, @attempts, @at)`);

  const pruneLog = db.prepare(
    `DELETE FROM automation_deliveries WHERE rowid IN (
       SELECT rowid FROM automation_deliveries WHERE at < ? LIMIT ${LOG_PRUNE_BATCH})`,
  );

  const disable = db.prepare(
    'UPDATE automation_endpoints SET disabled_at = ?, disabled_reason = ? WHERE name = ?',
  );
  const rowName = (name: string) => sealedRowName('automation_endpoints', [name]);
  let bound: Promise<void> | undefined;
  const ready = () => (bound ??= bindSealedRows(db, codec, 'automation_endpoints', ['name']));
  return {
    async add(endpoint) {
      await ready();
      const sealed = await sealValue(
        codec,
        { url: endpoint.url, secret: endpoint.secret },
        rowName(endpoint.name),
      );
      const created = Date.parse(endpoint.createdAt);
      return (
        insert.run(endpoint.name, sealed, JSON.stringify(endpoint.filters), created).changes > 0
      );
    },
    async list() {
      await ready();
      const endpoints = await Promise.all(
        all.all().map(async (row): Promise<AutomationEndpoint> => {
          const endpoint = {
            name: row.name,
            filters: JSON.parse(row.filters) as EndpointFilters,
            createdAt: new Date(row.created_at).toISOString(),
            disabledAt: row.disabled_at === null ? null : new Date(row.disabled_at).toISOString(),
            disabledReason: row.disabled_reason,
          };
          // One endpoint sealed with keys this process lacks (added from a shell with other
          // EBSYNC_ENCRYPTION_KEYS) threw here, and every drain stopped applying notices.
          const secrets = await openValue<{ url: string; secret: string }>(
            codec,
            row.sealed,
            rowName(row.name),
          ).catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
          if (typeof secrets !== 'object')
            return {
              ...endpoint,
              url: '',
              secret: '',
              unreadable: secrets ?? 'its sealed URL and secret hold no value',
            };
          return { ...endpoint, url: secrets.url, secret: secrets.secret };
        }),
      );
      if (!options.httpsOnly) return endpoints;
      return endpoints.map((endpoint) =>
        endpoint.unreadable === undefined && endpoint.url.startsWith('http:')
          ? { ...endpoint, refusedReason: PLAIN_HTTP_REFUSED }
          : endpoint,
      );
    },
    remove: (name) =>
      db.prepare('DELETE FROM automation_endpoints WHERE name = ?').run(name).changes > 0,
    disable(name, reason) {
      disable.run(Date.now(), reason, name);
    },
    enable: (name) =>
      db
        .prepare(
          'UPDATE automation_endpoints SET disabled_at = NULL, disabled_reason = NULL, failures = 0, open_until = 0 WHERE name = ?',
        )
        .run(name).changes > 0,
    breaker(name) {
      const row = breakerOf.get(name);
      return { failures: row?.failures ?? 0, openUntil: row?.open_until ?? 0 };
    },
    admit(name, now, openMs) {
      const row = breakerOf.get(name);
      if (!row || row.open_until === 0) return true;
      if (row.open_until > now) return false;
      return probe.run(now + openMs, name, now).changes > 0;
    },
    failed(name, now, threshold, openMs) {
      const row = fail.get(name) as { failures: number } | undefined;
      const failures = row?.failures ?? 0;
      if (failures >= threshold) open.run(now + openMs, name);
      const state = breakerOf.get(name);
      return { failures, openUntil: state?.open_until ?? 0 };
    },
    succeeded: (name) => void reset.run(name),
    logged(webhookId, endpoint) {
      const row = selectLog.get(webhookId, endpoint);
      return row ? entryOf(row) : undefined;
    },
    log(entry) {
      upsertLog.run({ ...entry, at: Date.parse(entry.at) });
      // A row per change and endpoint: without this the log grew for as long as changes came.
      if (options.logRetentionMs !== undefined) pruneLog.run(Date.now() - options.logRetentionMs);
    },
    deliveries({ endpoint, limit }) {
      const rows =
        endpoint === undefined
          ? db
              .prepare<[number], LogRow>(
                'SELECT * FROM automation_deliveries ORDER BY at DESC LIMIT ?',
              )
              .all(limit)
          : db
              .prepare<[string, number], LogRow>(
                'SELECT * FROM automation_deliveries WHERE endpoint = ? ORDER BY at DESC LIMIT ?',
              )
              .all(endpoint, limit);
      return rows.map(entryOf);
    },
    close: () => db.close(),
  };
}
