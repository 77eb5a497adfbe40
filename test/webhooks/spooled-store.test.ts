import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Inbox, Notice } from '../../store/inbox.js';
import { openInbox } from '../../store/open-inbox.js';
import { WebhookSpool } from '../../store/webhook-spool.js';
import { SpooledStore } from '../../webhooks/spooled-store.js';
import { closedPort } from '../helpers/ports.js';
import { eventually } from './deliveries.js';

/**
 * The receiver's spool on real files: an SQLite store whose write lock another process holds,
 * a Postgres store nothing answers for, and a spool an earlier run left notices in.
 */
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-spool-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const notice = (deliveryId: string, recordId = '7'): Notice => ({
  connectionId: 'shop',
  deliveryId,
  resource: 'leads',
  recordId,
  action: 'updated',
  occurredAt: null,
});

function spooledStore(name: string, inbox: () => Promise<Inbox>) {
  const spoolFile = join(dir, `${name}-spool.db`);
  const spool = WebhookSpool.open(spoolFile);
  const forwarded: string[] = [];
  const logged: string[] = [];
  const store = new SpooledStore({
    inbox,
    spool,
    spoolFile,
    inboxWaitMs: 300,
    forwarded: (ids) => forwarded.push(...ids),
    log: (_level, _fields, message) => logged.push(message),
    retryMs: { first: 100, max: 400 },
  });
  return { store, spool, forwarded, logged };
}

describe('SpooledStore', () => {
  it("spools while another process holds the SQLite store's lock, then forwards each notice once", async () => {
    const file = join(dir, 'locked-store.db');
    const inbox = await openInbox(`sqlite:${file}`);
    const { store, spool, forwarded, logged } = spooledStore('locked', () =>
      Promise.resolve(inbox),
    );
    const lock = new Database(file);
    try {
      lock.pragma('busy_timeout = 5000');
      lock.exec('BEGIN EXCLUSIVE');
      const started = Date.now();
      expect(await store.take(notice('d1'))).toBe('spooled');
      expect(Date.now() - started).toBeLessThan(2_000);
      // While it holds notices, the next go behind them at once, and a repeat is a duplicate.
      expect(await store.take(notice('d2', '8'))).toBe('spooled');
      expect(await store.take(notice('d2', '8'))).toBe('duplicate');
      expect(store.state()).toMatchObject({ held: 2, keptSinceStart: 2 });
      expect(logged).toEqual([
        'the store cannot take webhook notices; keeping them in the receiver spool until it can (senders are answered 2xx)',
      ]);
      lock.exec('COMMIT');
      await eventually(() => store.state().held === 0, 10_000, 'the spool forwarded');
      const pending = await inbox.pending('shop', 10);
      // d1's own commit got through once the lock went (its writer thread waited): one row.
      expect(pending.map((n) => n.deliveryId).sort()).toEqual(['d1', 'd2']);
      expect(forwarded).toContain('shop');
      expect(logged.at(-1)).toBe(
        'the store takes webhook notices again; the spooled ones are in its inbox',
      );
      // The store is back: a new notice goes straight to the inbox.
      expect(await store.take(notice('d3'))).toBe('stored');
      expect(store.state().held).toBe(0);
    } finally {
      if (lock.inTransaction) lock.exec('ROLLBACK');
      lock.close();
      await store.close();
      spool.close();
      await inbox.close();
    }
  });

  it('keeps notices while a Postgres store does not answer, and a restart forwards what it left', async () => {
    const away = `postgres://ebsync:secret@127.0.0.1:${await closedPort()}/ebsync`;
    const first = spooledStore('restart', () => openInbox(away));
    expect(await first.store.take(notice('p1'))).toBe('spooled');
    expect(await first.store.take(notice('p2', '9'))).toBe('spooled');
    // Still away after a few attempts to forward: nothing lost, nothing dropped.
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(first.store.state().held).toBe(2);
    await first.store.close();
    first.spool.close();

    // The next run, on a store that answers: what the spool held reaches its inbox at start.
    const file = join(dir, 'restart-store.db');
    const inbox = await openInbox(`sqlite:${file}`);
    const again = spooledStore('restart', () => Promise.resolve(inbox));
    try {
      await eventually(() => again.store.state().held === 0, 10_000, 'the left notices forwarded');
      expect((await inbox.pending('shop', 10)).map((n) => n.deliveryId)).toEqual(['p1', 'p2']);
      expect(again.forwarded).toEqual(['shop']);
    } finally {
      await again.store.close();
      again.spool.close();
      await inbox.close();
    }
  });

  it('rejects, for the receiver to answer 503, when the spool cannot keep the notice either', async () => {
    const away = `postgres://ebsync:secret@127.0.0.1:${await closedPort()}/ebsync`;
    const { store, spool } = spooledStore('closed', () => openInbox(away));
    spool.close();
    await expect(store.take(notice('c1'))).rejects.toThrow();
    await store.close();
  });
});
