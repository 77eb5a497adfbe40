import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import proto from '@temporalio/proto';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteAutomationStore } from '../../store/automation-endpoints.js';
import { sealValue } from '../../store/sealed-values.js';
import {
  registeredConnectionIds,
  sqliteWebhookRegistrations,
  type WebhookRegistration,
} from '../../store/webhook-registrations.js';
import { EncryptionCodec } from '../../worker/codec.js';

/**
 * Sealed values are bound to their rows (issue 30, item 12): the codec authenticates the
 * row's table and key as AES-GCM additional data, so a value copied into another row does not
 * open there; values sealed before that are sealed again for their rows once, and from then on
 * an unbound value is refused too.
 */
const dir = mkdtempSync(join(tmpdir(), 'ebsync-sealed-rows-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const codec = new EncryptionCodec([{ id: 'k1', key: randomBytes(32) }]);

function registration(name: string): WebhookRegistration {
  return {
    secret: `whsec_${randomBytes(24).toString('base64')}`,
    destination: `sqlite:/data/${name}.db`,
    url: `https://hooks.example/webhooks/${name}`,
    endpointId: null,
    registeredAt: new Date().toISOString(),
  };
}

const sealedOf = (db: Database.Database, id: string): Buffer =>
  (
    db
      .prepare<[string], { sealed: Buffer }>(
        'SELECT sealed FROM webhook_registrations WHERE connection_id = ?',
      )
      .get(id) as { sealed: Buffer }
  ).sealed;

const formatOf = (sealed: Buffer): string =>
  Buffer.from(
    proto.temporal.api.common.v1.Payload.decode(sealed).metadata?.['encryption-format'] ?? [],
  ).toString();

describe('sealed values bound to their rows', () => {
  it("refuses a connection's sealed registration copied into another connection's row", async () => {
    const file = join(dir, 'swap.db');
    const store = sqliteWebhookRegistrations(file, codec);
    const victim = registration('victim');
    const attacker = registration('attacker');
    await store.put('victim', victim);
    await store.put('attacker', attacker);
    const raw = new Database(file);
    raw
      .prepare('UPDATE webhook_registrations SET sealed = ? WHERE connection_id = ?')
      .run(sealedOf(raw, 'attacker'), 'victim');
    raw.close();
    try {
      await expect(store.get('victim')).rejects.toThrow(/failed authentication/);
      expect(await store.get('attacker')).toEqual(attacker);
    } finally {
      store.close();
    }
  });

  it('seals values of an earlier version again for their rows, once, then refuses unbound ones', async () => {
    const file = join(dir, 'upgrade.db');
    // webhooks.db as an earlier version left it: values sealed without their rows.
    const old = new Database(file);
    old.exec(`CREATE TABLE webhook_registrations (
      connection_id TEXT PRIMARY KEY, sealed BLOB NOT NULL, updated_at INTEGER NOT NULL)`);
    const shop = registration('shop');
    const unbound = await sealValue(codec, shop);
    old.prepare('INSERT INTO webhook_registrations VALUES (?, ?, ?)').run('shop', unbound, 1);
    old.close();
    expect(formatOf(unbound)).toBe('2');

    const store = sqliteWebhookRegistrations(file, codec);
    try {
      expect(await store.get('shop')).toEqual(shop);
      const raw = new Database(file);
      expect(formatOf(sealedOf(raw, 'shop'))).toBe('3');
      // An unbound value planted later (an old backup's) is not used.
      raw
        .prepare('UPDATE webhook_registrations SET sealed = ? WHERE connection_id = ?')
        .run(unbound, 'shop');
      raw.close();
      await expect(store.get('shop')).rejects.toThrow(/not sealed for its row/);
    } finally {
      store.close();
    }
  });

  it("does not open an automation endpoint's sealed URL and secret under another endpoint's name", async () => {
    const file = join(dir, 'endpoints.db');
    const store = sqliteAutomationStore(file, codec);
    const endpoint = (name: string) => ({
      name,
      url: `https://hooks.example/${name}/token-${name}`,
      secret: `whsec_${randomBytes(24).toString('base64')}`,
      filters: { resources: [], actions: [], connections: [] },
      createdAt: new Date().toISOString(),
      disabledAt: null,
      disabledReason: null,
    });
    await store.add(endpoint('crm'));
    await store.add(endpoint('mine'));
    const raw = new Database(file);
    const sealed = raw
      .prepare<[string], { sealed: Buffer }>(
        'SELECT sealed FROM automation_endpoints WHERE name = ?',
      )
      .get('mine')?.sealed;
    raw.prepare('UPDATE automation_endpoints SET sealed = ? WHERE name = ?').run(sealed, 'crm');
    raw.close();
    try {
      // Not opened under its new name: listed as unreadable, its URL and secret empty, and the
      // other endpoints as they are (one unreadable endpoint stopped every drain when it threw).
      const listed = await store.list();
      expect(listed.find((e) => e.name === 'crm')).toMatchObject({
        url: '',
        secret: '',
        unreadable: expect.stringMatching(/failed authentication/),
      });
      expect(listed.find((e) => e.name === 'mine')?.url).toBe(
        'https://hooks.example/mine/token-mine',
      );
    } finally {
      store.close();
    }
  });
});

describe('the registered connections, read without the codec', () => {
  it('lists them in name order, writing nothing, and none from a file without the table', async () => {
    const file = join(dir, 'listed.db');
    const store = sqliteWebhookRegistrations(file, codec);
    await store.put('zeta', registration('zeta'));
    await store.put('alpha', registration('alpha'));
    // Read while the store has it open (its WAL in use), then after it closed (no -wal, -shm).
    expect(registeredConnectionIds(file)).toEqual(['alpha', 'zeta']);
    store.close();
    const before = statSync(file).mtimeMs;
    expect(registeredConnectionIds(file)).toEqual(['alpha', 'zeta']);
    expect(statSync(file).mtimeMs).toBe(before);
    const empty = join(dir, 'other.db');
    new Database(empty).close();
    expect(registeredConnectionIds(empty)).toEqual([]);
  });
});
