import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Inbox, Notice } from '../../store/inbox.js';
import { openInbox } from '../../store/open-inbox.js';
import { openLedger } from '../../store/open-ledger.js';
import { openSqliteInbox } from '../../store/sqlite-inbox.js';
import Database from 'better-sqlite3';
import { createTestDatabase } from '../helpers/postgres.js';

const dir = mkdtempSync(join(tmpdir(), 'ebsync-inbox-'));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const notice = (deliveryId: string, recordId: string, connectionId = 'shop'): Notice => ({
  connectionId,
  deliveryId,
  resource: 'leads',
  recordId,
  action: 'updated',
  occurredAt: null,
});

const engines: { name: string; fresh: () => Promise<string> }[] = [
  { name: 'SQLite', fresh: () => Promise.resolve(`sqlite:${join(dir, `store-${++files}.db`)}`) },
  { name: 'Postgres', fresh: () => createTestDatabase('inbox') },
];

describe.each(engines)('the webhook inbox on $name', ({ fresh }) => {
  async function withInbox(fn: (inbox: Inbox, location: string) => Promise<void>): Promise<void> {
    const location = await fresh();
    const inbox = await openInbox(location);
    try {
      await fn(inbox, location);
    } finally {
      await inbox.close();
    }
  }

  it('stores a notice once per delivery id, and answers a repeat as a duplicate', () =>
    withInbox(async (inbox) => {
      expect(await inbox.accept(notice('d1', '7'))).toBe('stored');
      expect(await inbox.accept(notice('d1', '7'))).toBe('duplicate');
      // Another connection's id space is its own.
      expect(await inbox.accept(notice('d1', '7', 'other'))).toBe('stored');
      const pending = await inbox.pending('shop', 10);
      expect(pending.map((n) => n.deliveryId)).toEqual(['d1']);
      // Once applied, a repeat is still a duplicate: nothing is stored again.
      await inbox.markDone('shop', [pending[0]!.seq]);
      expect(await inbox.accept(notice('d1', '7'))).toBe('duplicate');
      expect(await inbox.pending('shop', 10)).toEqual([]);
    }));

  it("finds a record's pending notices of any age, of this connection and type only", () =>
    withInbox(async (inbox) => {
      for (const [id, record] of [
        ['p1', '7'],
        ['p2', '8'],
        ['p3', '7'],
        ['p4', '9'],
        ['p5', '7'],
      ] as const) {
        await inbox.accept(notice(id, record));
      }
      await inbox.accept(notice('p6', '7', 'other'));
      await inbox.accept({ ...notice('p7', '7'), resource: 'events' });
      const [first] = await inbox.pending('shop', 1);
      await inbox.markDone('shop', [first!.seq]);
      const found = await inbox.pendingOf(
        'shop',
        [
          { resource: 'leads', recordId: '7' },
          { resource: 'leads', recordId: '9' },
        ],
        10,
      );
      expect(found.map((n) => `${n.resource}/${n.recordId}`)).toEqual([
        'leads/7',
        'leads/9',
        'leads/7',
      ]);
      expect(found.every((n) => typeof n.seq === 'number')).toBe(true);
      expect(await inbox.pendingOf('shop', [{ resource: 'leads', recordId: '7' }], 1)).toHaveLength(
        1,
      );
      expect(await inbox.pendingOf('shop', [], 10)).toEqual([]);
    }));

  it('commits concurrent notices together, a repeat within one group stored once', () =>
    withInbox(async (inbox) => {
      const batch = Array.from({ length: 200 }, (_, i) => notice(`g${i % 150}`, String(i)));
      const answers = await Promise.all(batch.map((n) => inbox.accept(n)));
      expect(answers.filter((a) => a === 'stored')).toHaveLength(150);
      // The repeats are the later ones: the first of each id is the one stored.
      expect(answers.slice(150).every((a) => a === 'duplicate')).toBe(true);
      const { notices, commits } = inbox.acceptedSoFar();
      expect(notices).toBe(200);
      // 200 callers in one turn of the event loop: a few commits, not 200.
      expect(commits).toBeLessThanOrEqual(5);
      expect((await inbox.pending('shop', 1_000)).map((n) => n.recordId)).toEqual(
        Array.from({ length: 150 }, (_, i) => String(i)),
      );
    }));

  it('gives pending notices oldest first, a batch at a time, and counts them for the status', () =>
    withInbox(async (inbox) => {
      for (let i = 0; i < 5; i++) await inbox.accept(notice(`o${i}`, String(10 + i)));
      await inbox.accept(notice('x0', '1', 'quiet'));
      const first = await inbox.pending('shop', 3);
      expect(first.map((n) => n.deliveryId)).toEqual(['o0', 'o1', 'o2']);
      expect(first[0]).toMatchObject({ connectionId: 'shop', resource: 'leads', recordId: '10' });
      expect(await inbox.pendingConnections()).toEqual(['quiet', 'shop']);
      expect(
        await inbox.markDone(
          'shop',
          first.map((n) => n.seq),
        ),
      ).toBe(3);
      // Marking again changes nothing.
      expect(
        await inbox.markDone(
          'shop',
          first.map((n) => n.seq),
        ),
      ).toBe(0);
      expect((await inbox.pending('shop', 3)).map((n) => n.deliveryId)).toEqual(['o3', 'o4']);
      const stats = await inbox.stats(60_000);
      expect(stats).toEqual([
        { connectionId: 'quiet', pending: 1, oldestPendingAt: expect.any(Date), drained: 0 },
        { connectionId: 'shop', pending: 2, oldestPendingAt: expect.any(Date), drained: 3 },
      ]);
      expect(Date.now() - stats[1]!.oldestPendingAt!.getTime()).toBeLessThan(60_000);
      // A minute on, the three applied are out of the window.
      expect((await inbox.stats(60_000, new Date(Date.now() + 120_000)))[1]?.drained).toBe(0);
    }));

  it('prunes applied notices past the dedupe window, never pending ones', () =>
    withInbox(async (inbox) => {
      await inbox.accept(notice('p1', '1'));
      await inbox.accept(notice('p2', '2'));
      const [one] = await inbox.pending('shop', 1);
      await inbox.markDone('shop', [one!.seq], new Date(Date.now() - 3_600_000));
      expect(await inbox.prune(new Date(Date.now() - 60_000), 100)).toBe(1);
      // Its id dedupes no more: a retry now is a new notice (harmless: a re-read).
      expect(await inbox.accept(notice('p1', '1'))).toBe('stored');
      expect((await inbox.pending('shop', 10)).map((n) => n.deliveryId)).toEqual(['p2', 'p1']);
    }));

  it('keeps owed changes by batch and record, replaced on a retry, until dropped', () =>
    withInbox(async (inbox) => {
      const change = (recordId: string, text: string) => ({
        connectionId: 'shop',
        batchKey: 'run-1:1',
        resource: 'leads',
        recordId,
        action: 'written' as const,
        sealed: Buffer.from(text),
        appliedAt: new Date(),
      });
      await inbox.keepChanges([change('1', 'first'), change('2', 'second')]);
      await inbox.keepChanges([change('1', 'first again')]);
      const owed = await inbox.owedChanges('shop', 'run-1:1');
      expect(owed.map((c) => [c.recordId, c.sealed.toString()]).sort()).toEqual([
        ['1', 'first again'],
        ['2', 'second'],
      ]);
      await inbox.dropChanges('shop', 'run-1:1', [{ resource: 'leads', recordId: '1' }]);
      expect((await inbox.owedChanges('shop', 'run-1:1')).map((c) => c.recordId)).toEqual(['2']);
      expect(await inbox.owedChanges('shop', 'run-1:2')).toEqual([]);
      // A later run finds what is left by age, whatever the batch.
      const later = new Date(Date.now() + 1_000);
      expect((await inbox.leftoverChanges('shop', later, 10)).map((c) => c.recordId)).toEqual([
        '2',
      ]);
      expect(await inbox.leftoverChanges('shop', new Date(Date.now() - 60_000), 10)).toEqual([]);
      expect(await inbox.leftoverChanges('other', later, 10)).toEqual([]);
    }));

  it("holds a drain's watch for its time and destination, until it ends or runs out", () =>
    withInbox(async (inbox) => {
      expect(await inbox.watching('shop')).toBeNull();
      await inbox.watch('shop', 'sqlite:a.db', 5_000);
      const held = await inbox.watching('shop');
      expect(held?.destination).toBe('sqlite:a.db');
      expect(held!.msLeft).toBeGreaterThan(4_000);
      expect(held!.msLeft).toBeLessThanOrEqual(5_000);
      expect(await inbox.watching('other')).toBeNull();
      // Renewed for another destination: the new one holds.
      await inbox.watch('shop', 'sqlite:b.db', 5_000);
      expect((await inbox.watching('shop'))?.destination).toBe('sqlite:b.db');
      await inbox.watch('shop', 'sqlite:b.db', 0);
      expect(await inbox.watching('shop')).toBeNull();
      await inbox.watch('shop', 'sqlite:b.db', 150);
      await new Promise((r) => setTimeout(r, 300));
      expect(await inbox.watching('shop')).toBeNull();
    }));

  it('shares the store with the ledger: either may open it first', async () => {
    const location = await fresh();
    const inbox = await openInbox(location);
    const ledger = await openLedger(location);
    try {
      expect(ledger.location).toBe(inbox.location);
      expect(await inbox.accept(notice('s1', '1'))).toBe('stored');
    } finally {
      await ledger.close();
      await inbox.close();
    }
  });
});

describe('the SQLite inbox: where a group is committed', () => {
  it('commits a notice that came alone on the event loop, a burst on the writer thread, in arrival order', async () => {
    const inbox = openSqliteInbox(join(dir, `store-${++files}.db`));
    try {
      for (const id of ['a1', 'a2', 'a3'])
        expect(await inbox.accept(notice(id, id))).toBe('stored');
      expect(inbox.committedOnLoop()).toBe(3);
      const burst = Array.from({ length: 50 }, (_, i) => notice(`b${i}`, `b${i}`));
      // A repeat of a notice committed on the loop is a duplicate on the thread too.
      burst.push(notice('a2', 'a2'));
      const answers = await Promise.all(burst.map((n) => inbox.accept(n)));
      expect(answers.filter((a) => a === 'stored')).toHaveLength(50);
      expect(answers.at(-1)).toBe('duplicate');
      expect(inbox.committedOnLoop()).toBe(3);
      expect(inbox.acceptedSoFar().commits).toBeLessThanOrEqual(3 + 3);
      expect(await inbox.accept(notice('a1', 'a1'))).toBe('duplicate');
      expect((await inbox.pending('shop', 100)).map((n) => n.deliveryId)).toEqual([
        'a1',
        'a2',
        'a3',
        ...Array.from({ length: 50 }, (_, i) => `b${i}`),
      ]);
    } finally {
      await inbox.close();
    }
  });

  it("never waits for another process's write lock on the event loop: the lone notice waits on the thread", async () => {
    const file = join(dir, `store-${++files}.db`);
    const inbox = openSqliteInbox(file);
    const other = new Database(file);
    try {
      expect(await inbox.accept(notice('w0', '0'))).toBe('stored');
      other.exec('BEGIN IMMEDIATE');
      let settled = false;
      const accepted = inbox.accept(notice('w1', '1')).finally(() => {
        settled = true;
      });
      // The event loop keeps turning while the lock is held: these timers fire.
      const ticks: number[] = [];
      const since = Date.now();
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, 40));
        ticks.push(i);
      }
      expect(ticks).toHaveLength(5);
      // Not stopped in SQLite's busy wait meanwhile (the thread's waits up to 10 s).
      expect(Date.now() - since).toBeLessThan(2_000);
      expect(settled).toBe(false);
      other.exec('COMMIT');
      expect(await accepted).toBe('stored');
      expect(inbox.committedOnLoop()).toBe(1);
      expect((await inbox.pending('shop', 10)).map((n) => n.deliveryId)).toEqual(['w0', 'w1']);
    } finally {
      other.close();
      await inbox.close();
    }
  });
});

describe('an inbox whose store cannot be reached', () => {
  it('fails the accept with a retryable store error', async () => {
    const attempt = openInbox('postgres://ebsync:secret@127.0.0.1:1/none');
    await expect(attempt).rejects.toMatchObject({ name: 'StoreUnavailableError', retryable: true });
    await expect(attempt).rejects.not.toThrow(/secret/);
  });
});
