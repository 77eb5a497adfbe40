import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteAutomationStore } from '../../store/automation-endpoints.js';
import { EncryptionCodec } from '../../worker/codec.js';

const dir = mkdtempSync(join(tmpdir(), 'ebsync-automation-log-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const codec = new EncryptionCodec([{ id: 'k1', key: randomBytes(32) }]);

describe('the automation delivery log', () => {
  it('keeps why an attempt got no answer, and opens a log an earlier version kept (no reason column)', () => {
    const file = join(dir, 'webhooks.db');
    // The log as the version before reasons made it, with one row.
    const old = new Database(file);
    old.exec(`CREATE TABLE automation_deliveries (
      webhook_id TEXT NOT NULL, endpoint TEXT NOT NULL, connection_id TEXT NOT NULL,
      resource TEXT NOT NULL, record_id TEXT NOT NULL, action TEXT NOT NULL, status TEXT NOT NULL,
      http_status INTEGER, attempts INTEGER NOT NULL, at INTEGER NOT NULL,
      PRIMARY KEY (webhook_id, endpoint))`);
    old
      .prepare('INSERT INTO automation_deliveries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run('msg_old', 'hook', 'shop', 'leads', '1', 'written', 'failed', 503, 1, 1_000);
    old.close();

    const store = sqliteAutomationStore(file, codec);
    try {
      store.log({
        webhookId: 'msg_new',
        endpoint: 'hook',
        connectionId: 'shop',
        resource: 'leads',
        recordId: '2',
        action: 'written',
        status: 'failed',
        httpStatus: null,
        reason: 'no answer in time (ETIMEDOUT)',
        attempts: 2,
        at: new Date(2_000).toISOString(),
      });
      const rows = store.deliveries({ endpoint: 'hook', limit: 10 });
      expect(rows.map((r) => [r.webhookId, r.httpStatus, r.reason])).toEqual([
        ['msg_new', null, 'no answer in time (ETIMEDOUT)'],
        ['msg_old', 503, null],
      ]);
    } finally {
      store.close();
    }
    // Opened again: the column is there once, nothing is added twice.
    sqliteAutomationStore(file, codec).close();
  });
});
