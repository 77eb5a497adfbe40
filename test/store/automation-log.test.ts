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

  it('keeps an entry for its retention: each entry logged prunes older ones, so the log does not grow for ever', () => {
    const file = join(dir, 'retention.db');
    const entry = (webhookId: string, at: number) => ({
      webhookId,
      endpoint: 'hook',
      connectionId: 'shop',
      resource: 'leads',
      recordId: webhookId,
      action: 'written' as const,
      status: 'delivered' as const,
      httpStatus: 200,
      reason: null,
      attempts: 1,
      at: new Date(at).toISOString(),
    });
    const now = Date.now();
    // The CLI reads the log without a retention: it prunes nothing.
    const reader = sqliteAutomationStore(file, codec);
    for (let i = 0; i < 20; i++) reader.log(entry(`msg_old_${i}`, now - 3 * 3_600_000));
    reader.log(entry('msg_recent', now - 30 * 60_000));
    expect(reader.deliveries({ limit: 100 })).toHaveLength(21);
    reader.close();

    const store = sqliteAutomationStore(file, codec, { logRetentionMs: 3_600_000 });
    try {
      store.log(entry('msg_now', now));
      store.log(entry('msg_now_2', now));
      expect(
        store
          .deliveries({ limit: 100 })
          .map((r) => r.webhookId)
          .sort(),
      ).toEqual(['msg_now', 'msg_now_2', 'msg_recent']);
    } finally {
      store.close();
    }
  });
});
