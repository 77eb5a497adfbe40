import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreLocationError } from '../../store/errors.js';
import { openLedger } from '../../store/open-ledger.js';
import { createTestDatabase, queryDatabase } from '../helpers/postgres.js';
import { describeLedger } from './ledger-suite.js';

const dir = mkdtempSync(join(tmpdir(), 'ebsync-ledger-'));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeLedger('SQLite', {
  fresh: () => Promise.resolve(`sqlite:${join(dir, `store-${++files}.db`)}`),
  open: (location) => openLedger(location),
  query: (location, sql) => {
    const db = new Database(location.slice('sqlite:'.length));
    try {
      const statement = db.prepare(sql);
      if (statement.reader) return Promise.resolve(statement.all() as Record<string, unknown>[]);
      statement.run();
      return Promise.resolve([]);
    } finally {
      db.close();
    }
  },
});

describeLedger('Postgres', {
  fresh: () => createTestDatabase('ledger'),
  open: (location) => openLedger(location),
  query: (location, sql) => queryDatabase(location, sql),
});

describe('openLedger', () => {
  it('refuses a location that is neither a file nor postgres://, without echoing a password', async () => {
    const attempt = openLedger('mysql://root:hunter2@db/ebsync');
    await expect(attempt).rejects.toThrow(StoreLocationError);
    await expect(attempt).rejects.toThrow(/expected a file path, sqlite:PATH or postgres:/);
    await expect(attempt).rejects.not.toThrow(/hunter2/);
  });

  it('names a Postgres store without its credentials', async () => {
    const url = await createTestDatabase('ledger');
    const ledger = await openLedger(url);
    try {
      const parsed = new URL(url);
      expect(ledger.location).toBe(
        `postgres://${parsed.hostname}:${parsed.port}${parsed.pathname}`,
      );
      expect(ledger.location).not.toContain(decodeURIComponent(parsed.password));
    } finally {
      await ledger.close();
    }
  });
});
