import { StoreMigrationError } from './errors.js';

/**
 * The ledger's schema, one version at a time. A version, once released, never changes: a
 * new need is a new version. Applied at open, in one transaction, recorded in
 * `schema_migrations`.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sqlite: string;
  readonly postgres: string;
}

export const LEDGER_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'ledger entries, pass generations, passes and checkpoints',
    // Times are epoch milliseconds in SQLite, timestamptz in Postgres.
    sqlite: `
      CREATE TABLE ledger_entries (
        connection_id TEXT NOT NULL,
        destination TEXT NOT NULL,
        resource TEXT NOT NULL,
        source_id TEXT NOT NULL,
        destination_key TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        seen_generation INTEGER NOT NULL,
        first_seen_at INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL,
        deleted_at INTEGER,
        PRIMARY KEY (connection_id, destination, resource, source_id)
      ) STRICT, WITHOUT ROWID;
      CREATE TABLE pass_generations (
        connection_id TEXT NOT NULL,
        destination TEXT NOT NULL,
        last_generation INTEGER NOT NULL,
        PRIMARY KEY (connection_id, destination)
      ) STRICT, WITHOUT ROWID;
      CREATE TABLE passes (
        connection_id TEXT NOT NULL,
        destination TEXT NOT NULL,
        pass TEXT NOT NULL,
        open_generation INTEGER,
        open_started_at INTEGER,
        completed_generation INTEGER,
        completed_started_at INTEGER,
        completed_at INTEGER,
        PRIMARY KEY (connection_id, destination, pass)
      ) STRICT, WITHOUT ROWID;
      CREATE TABLE pass_checkpoints (
        connection_id TEXT NOT NULL,
        destination TEXT NOT NULL,
        pass TEXT NOT NULL,
        partition TEXT NOT NULL,
        generation INTEGER NOT NULL,
        checkpoint TEXT NOT NULL,
        saved_at INTEGER NOT NULL,
        PRIMARY KEY (connection_id, destination, pass, partition)
      ) STRICT, WITHOUT ROWID;`,
    postgres: `
      CREATE TABLE ledger_entries (
        connection_id text NOT NULL,
        destination text NOT NULL,
        resource text NOT NULL,
        source_id text NOT NULL,
        destination_key text NOT NULL,
        content_hash text NOT NULL,
        seen_generation integer NOT NULL,
        first_seen_at timestamptz NOT NULL,
        last_seen_at timestamptz NOT NULL,
        deleted_at timestamptz,
        PRIMARY KEY (connection_id, destination, resource, source_id)
      );
      CREATE TABLE pass_generations (
        connection_id text NOT NULL,
        destination text NOT NULL,
        last_generation integer NOT NULL,
        PRIMARY KEY (connection_id, destination)
      );
      CREATE TABLE passes (
        connection_id text NOT NULL,
        destination text NOT NULL,
        pass text NOT NULL,
        open_generation integer,
        open_started_at timestamptz,
        completed_generation integer,
        completed_started_at timestamptz,
        completed_at timestamptz,
        PRIMARY KEY (connection_id, destination, pass)
      );
      CREATE TABLE pass_checkpoints (
        connection_id text NOT NULL,
        destination text NOT NULL,
        pass text NOT NULL,
        partition text NOT NULL,
        generation integer NOT NULL,
        checkpoint jsonb NOT NULL,
        saved_at timestamptz NOT NULL,
        PRIMARY KEY (connection_id, destination, pass, partition)
      );`,
  },
  {
    version: 2,
    name: 'request slots: one per connection, shared by every worker',
    // next_at: epoch milliseconds (fractional) at which the connection's next slot begins.
    sqlite: `
      CREATE TABLE request_slots (
        connection_id TEXT NOT NULL PRIMARY KEY,
        next_at REAL NOT NULL
      ) STRICT, WITHOUT ROWID;`,
    postgres: `
      CREATE TABLE request_slots (
        connection_id text NOT NULL PRIMARY KEY,
        next_at double precision NOT NULL
      );`,
  },
  {
    version: 3,
    name: 'checkpoint versions: a save replaces only the version its caller read',
    sqlite: `ALTER TABLE pass_checkpoints ADD COLUMN version INTEGER NOT NULL DEFAULT 1;`,
    postgres: `ALTER TABLE pass_checkpoints ADD COLUMN version integer NOT NULL DEFAULT 1;`,
  },
  {
    version: 4,
    name: 'webhook inbox (notices before their 2xx) and the changes owed to automation endpoints',
    // seq: arrival order (the drain claims oldest first). done_at: when a drain applied the
    // notice; done rows stay for the dedupe window, then are pruned. The outbox keeps the
    // record as written, sealed with the payload codec, until every endpoint owed it took it.
    sqlite: `
      CREATE TABLE webhook_inbox (
        seq INTEGER PRIMARY KEY,
        connection_id TEXT NOT NULL,
        delivery_id TEXT NOT NULL,
        resource TEXT NOT NULL,
        record_id TEXT NOT NULL,
        action TEXT NOT NULL,
        occurred_at TEXT,
        received_at INTEGER NOT NULL,
        done_at INTEGER,
        UNIQUE (connection_id, delivery_id)
      ) STRICT;
      CREATE INDEX webhook_inbox_pending ON webhook_inbox (connection_id, seq) WHERE done_at IS NULL;
      CREATE INDEX webhook_inbox_done ON webhook_inbox (done_at) WHERE done_at IS NOT NULL;
      CREATE TABLE automation_outbox (
        connection_id TEXT NOT NULL,
        batch_key TEXT NOT NULL,
        resource TEXT NOT NULL,
        record_id TEXT NOT NULL,
        action TEXT NOT NULL,
        sealed BLOB NOT NULL,
        applied_at INTEGER NOT NULL,
        PRIMARY KEY (connection_id, batch_key, resource, record_id)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX automation_outbox_applied ON automation_outbox (applied_at);`,
    postgres: `
      CREATE TABLE webhook_inbox (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        connection_id text NOT NULL,
        delivery_id text NOT NULL,
        resource text NOT NULL,
        record_id text NOT NULL,
        action text NOT NULL,
        occurred_at text,
        received_at timestamptz NOT NULL,
        done_at timestamptz,
        UNIQUE (connection_id, delivery_id)
      );
      CREATE INDEX webhook_inbox_pending ON webhook_inbox (connection_id, seq) WHERE done_at IS NULL;
      CREATE INDEX webhook_inbox_done ON webhook_inbox (done_at) WHERE done_at IS NOT NULL;
      CREATE TABLE automation_outbox (
        connection_id text NOT NULL,
        batch_key text NOT NULL,
        resource text NOT NULL,
        record_id text NOT NULL,
        action text NOT NULL,
        sealed bytea NOT NULL,
        applied_at timestamptz NOT NULL,
        PRIMARY KEY (connection_id, batch_key, resource, record_id)
      );
      CREATE INDEX automation_outbox_applied ON automation_outbox (applied_at);`,
  },
  {
    version: 5,
    name: 'drain watches: a drain that polls the inbox itself needs no wake-ups meanwhile',
    // One row per connection: until when its drain promises to look at the inbox on its own,
    // and for which destination. Receivers skip the wake-up while it holds.
    sqlite: `
      CREATE TABLE drain_watches (
        connection_id TEXT PRIMARY KEY,
        destination TEXT NOT NULL,
        until_ms INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;`,
    postgres: `
      CREATE TABLE drain_watches (
        connection_id text PRIMARY KEY,
        destination text NOT NULL,
        until timestamptz NOT NULL
      );`,
  },
  {
    version: 6,
    name: 'leads written before their budget reached its column: written once more',
    // Until this version the estimated_budget_cents column (and a CRM deal's amount) read an
    // attribute the canonical record does not have, so every lead went out without its budget,
    // and its hash says it is up to date. Forgotten hashes make the next pass write each lead
    // again (Ledger.forgetHashes' sentinel); seen and deletion marks stay.
    sqlite: `UPDATE ledger_entries SET content_hash = 'forgotten' WHERE resource = 'leads';`,
    postgres: `UPDATE ledger_entries SET content_hash = 'forgotten' WHERE resource = 'leads';`,
  },
  {
    version: 7,
    name: 'what automation endpoints were last sent of each record, apart from what was written',
    // Until this version a drain sent a change only when its own write changed the ledger, so
    // a change a pass wrote first never reached the endpoints. Existing entries start as sent,
    // as that version would have judged them (the hash written; 'deleted' once marked deleted):
    // no endpoint gets a record again just because the store was upgraded.
    sqlite: `
      ALTER TABLE ledger_entries ADD COLUMN forwarded_hash TEXT;
      UPDATE ledger_entries
        SET forwarded_hash = CASE WHEN deleted_at IS NULL THEN content_hash ELSE 'deleted' END;`,
    postgres: `
      ALTER TABLE ledger_entries ADD COLUMN forwarded_hash text;
      UPDATE ledger_entries
        SET forwarded_hash = CASE WHEN deleted_at IS NULL THEN content_hash ELSE 'deleted' END;`,
  },
  {
    version: 8,
    name: 'Pipedrive events written with the UTC day of their start: written once more',
    // Until this version an event's deal closed on the UTC day of starts_at, a day late for an
    // evening event west of UTC. The default is now the start day in the business time zone;
    // forgotten hashes make the next full pass write each Pipedrive event again (a PATCH of a deal
    // it has the ids of), as version 6 did for leads. Seen and deletion marks stay.
    sqlite: `UPDATE ledger_entries SET content_hash = 'forgotten'
      WHERE resource = 'events' AND destination LIKE 'pipedrive:%';`,
    postgres: `UPDATE ledger_entries SET content_hash = 'forgotten'
      WHERE resource = 'events' AND destination LIKE 'pipedrive:%';`,
  },
  {
    version: 9,
    name: 'destination writers: one connection per destination',
    // The mirror's rows are keyed by the service's ids alone: a second connection (another
    // business) mirrored into the same destination overwrote the first's rows silently. Each
    // destination now records its writer, starting with every connection the ledger shows
    // there; where that is already two, both are refused until one is forgotten.
    sqlite: `
      CREATE TABLE destination_writers (
        destination TEXT NOT NULL,
        connection_id TEXT NOT NULL,
        since INTEGER NOT NULL,
        PRIMARY KEY (destination, connection_id)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO destination_writers (destination, connection_id, since)
        SELECT destination, connection_id, CAST(strftime('%s', 'now') AS INTEGER) * 1000 FROM (
          SELECT destination, connection_id FROM ledger_entries
          UNION SELECT destination, connection_id FROM pass_generations);`,
    postgres: `
      CREATE TABLE destination_writers (
        destination text NOT NULL,
        connection_id text NOT NULL,
        since timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (destination, connection_id)
      );
      INSERT INTO destination_writers (destination, connection_id)
        SELECT destination, connection_id FROM ledger_entries
        UNION SELECT destination, connection_id FROM pass_generations;`,
  },
];

/** The migrations still to apply given the versions a database has, in order. */
export function pendingMigrations(
  applied: readonly number[],
  migrations: readonly Migration[] = LEDGER_MIGRATIONS,
): Migration[] {
  const known = Math.max(0, ...migrations.map((m) => m.version));
  const newest = Math.max(0, ...applied);
  if (newest > known) {
    throw new StoreMigrationError(
      `the store is at schema version ${newest}, newer than this ebsync knows (${known}); run a newer ebsync`,
    );
  }
  const done = new Set(applied);
  return migrations.filter((m) => !done.has(m.version)).sort((a, b) => a.version - b.version);
}
