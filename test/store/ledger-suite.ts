import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LEDGER_MIGRATIONS } from '../../store/ledger-migrations.js';
import {
  CheckpointConflictError,
  PassSupersededError,
  StoreMigrationError,
} from '../../store/errors.js';
import {
  FORWARDED_DELETED,
  type Ledger,
  type LedgerScope,
  type PassKey,
} from '../../store/ledger.js';

/** How the suite reaches one engine: a fresh store per test, reopenable, and raw SQL. */
export interface LedgerBackend {
  /** A new, empty store location. */
  fresh(): Promise<string>;
  open(location: string): Promise<Ledger>;
  /** Runs SQL on the store directly (to look at or damage what the ledger wrote). */
  query(location: string, sql: string): Promise<Record<string, unknown>[]>;
}

const scope: LedgerScope = {
  connectionId: 'c1',
  destination: 'sqlite:/tmp/m.db',
  resource: 'leads',
};
const pass: PassKey = { connectionId: 'c1', destination: 'sqlite:/tmp/m.db', pass: 'leads:full' };

const ids = (n: number, from = 1) =>
  Array.from({ length: n }, (_, i) => String(from + i).padStart(6, '0'));

/** The same behaviour, asserted on every ledger implementation. */
export function describeLedger(name: string, backend: LedgerBackend): void {
  describe(`${name} ledger`, () => {
    let location: string;
    let ledger: Ledger;

    beforeEach(async () => {
      location = await backend.fresh();
      ledger = await backend.open(location);
    });
    afterEach(async () => {
      await ledger.close();
    });

    it('says new, changed or unchanged per record, in the order asked', async () => {
      const first = await ledger.classify(scope, [
        { id: '1', hash: 'a' },
        { id: '2', hash: 'b' },
      ]);
      expect(first.map((c) => c.state)).toEqual(['new', 'new']);
      expect(first.every((c) => c.destinationKey === null)).toBe(true);

      await ledger.recordWritten(scope, 1, [
        { id: '1', hash: 'a', destinationKey: 'crm-1' },
        { id: '2', hash: 'b', destinationKey: 'crm-2' },
      ]);
      const second = await ledger.classify(scope, [
        { id: '2', hash: 'b2' },
        { id: '3', hash: 'c' },
        { id: '1', hash: 'a' },
        { id: '2', hash: 'b2' },
      ]);
      expect(second).toEqual([
        { id: '2', state: 'changed', destinationKey: 'crm-2', seenGeneration: 1 },
        { id: '3', state: 'new', destinationKey: null, seenGeneration: null },
        { id: '1', state: 'unchanged', destinationKey: 'crm-1', seenGeneration: 1 },
        { id: '2', state: 'changed', destinationKey: 'crm-2', seenGeneration: 1 },
      ]);
      // The generation that last saw a record: a pass tells its own earlier reads from it.
      await ledger.markSeen(scope, 3, ['1']);
      const third = await ledger.classify(scope, [{ id: '1', hash: 'a' }]);
      expect(third[0]?.seenGeneration).toBe(3);
    });

    it('keeps the first sighting and moves the last one on each write', async () => {
      const t1 = new Date('2027-01-01T00:00:00Z');
      const t2 = new Date('2027-01-02T00:00:00Z');
      await ledger.recordWritten(scope, 1, [{ id: '1', hash: 'a', destinationKey: 'k1' }], t1);
      await ledger.recordWritten(scope, 2, [{ id: '1', hash: 'b', destinationKey: 'k2' }], t2);
      const [entry] = await ledger.get(scope, ['1', 'missing']);
      expect(entry).toEqual({
        id: '1',
        destinationKey: 'k2',
        hash: 'b',
        generation: 2,
        firstSeenAt: t1,
        lastSeenAt: t2,
        deletedAt: null,
        forwardedHash: null,
      });
    });

    it('takes a batch with the same id twice: the last one wins', async () => {
      await ledger.recordWritten(scope, 1, [
        { id: '1', hash: 'old', destinationKey: 'k' },
        { id: '1', hash: 'new', destinationKey: 'k' },
      ]);
      expect((await ledger.get(scope, ['1']))[0]?.hash).toBe('new');
    });

    it('marks unchanged records seen without touching their hash, and counts them', async () => {
      await ledger.recordWritten(scope, 1, [
        { id: '1', hash: 'a', destinationKey: '1' },
        { id: '2', hash: 'b', destinationKey: '2' },
      ]);
      const at = new Date('2030-01-01T00:00:00Z');
      expect(await ledger.markSeen(scope, 2, ['1', '2', 'unknown'], at)).toBe(2);
      const entries = await ledger.get(scope, ['1', '2']);
      expect(entries.map((e) => [e.generation, e.hash, e.lastSeenAt.toISOString()]).sort()).toEqual(
        [
          [2, 'a', at.toISOString()],
          [2, 'b', at.toISOString()],
        ],
      );
      // A late retry from an older pass does not move the generation back.
      await ledger.markSeen(scope, 1, ['1']);
      expect((await ledger.get(scope, ['1']))[0]?.generation).toBe(2);
    });

    it('lists the live entries a pass did not see, page by page, each once', async () => {
      const all = ids(25);
      await ledger.recordWritten(
        scope,
        1,
        all.map((id) => ({ id, hash: 'h', destinationKey: id })),
      );
      const seen = all.filter((_, i) => i % 3 !== 0);
      await ledger.markSeen(scope, 2, seen);
      const gone = all.filter((_, i) => i % 3 === 0); // 9 of them
      await ledger.markDeleted(scope, [gone[0]!]);

      const listed: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await ledger.listUnseen(scope, 2, { limit: 3, ...(after ? { after } : {}) });
        if (page.length === 0) break;
        expect(page.length).toBeLessThanOrEqual(3);
        listed.push(...page.map((e) => e.id));
        after = page.at(-1)!.id;
      }
      expect(listed).toEqual(gone.slice(1));
      // What the pass reached: the 16 it saw, not the 8 unseen nor the deleted one.
      expect(await ledger.countSeen(scope, 2)).toBe(seen.length);
      expect(await ledger.countSeen(scope, 1)).toBe(all.length - 1);
      // Nothing is unseen relative to the generation that wrote everything.
      expect(await ledger.listUnseen(scope, 1, { limit: 100 })).toEqual([]);
    });

    it('gives the numeric range of the ids a pass saw, by number and not by text', async () => {
      expect(await ledger.seenIdRange(scope, 1)).toBeNull();
      const written = ['9', '10', '250', '31', 'q_7', '0'];
      await ledger.recordWritten(
        scope,
        1,
        written.map((id) => ({ id, hash: 'h', destinationKey: id })),
      );
      expect(await ledger.seenIdRange(scope, 1)).toEqual({ min: 9, max: 250 });
      await ledger.markSeen(scope, 2, ['10', '31']);
      expect(await ledger.seenIdRange(scope, 2)).toEqual({ min: 10, max: 31 });
      await ledger.markDeleted(scope, ['31']);
      expect(await ledger.seenIdRange(scope, 2)).toEqual({ min: 10, max: 10 });
      expect(await ledger.seenIdRange(scope, 3)).toBeNull();
    });

    it('marks deleted once, and a record that comes back is changed and live again', async () => {
      await ledger.recordWritten(scope, 1, [{ id: '1', hash: 'a', destinationKey: '1' }]);
      const t = new Date('2027-03-01T00:00:00Z');
      expect(await ledger.markDeleted(scope, ['1', 'unknown'], t)).toBe(1);
      expect(await ledger.markDeleted(scope, ['1'], new Date())).toBe(0);
      expect((await ledger.get(scope, ['1']))[0]?.deletedAt).toEqual(t);
      expect(await ledger.counts(scope)).toEqual({ live: 0, deleted: 1 });

      const [again] = await ledger.classify(scope, [{ id: '1', hash: 'a' }]);
      expect(again?.state).toBe('changed');
      await ledger.recordWritten(scope, 2, [{ id: '1', hash: 'a', destinationKey: '1' }]);
      expect((await ledger.get(scope, ['1']))[0]?.deletedAt).toBeNull();
      expect(await ledger.counts(scope)).toEqual({ live: 1, deleted: 0 });
    });

    it('keeps connections, destinations and resources apart', async () => {
      const others: LedgerScope[] = [
        { ...scope, connectionId: 'c2' },
        { ...scope, destination: 'postgres://h:5432/db' },
        { ...scope, resource: 'events' },
      ];
      await ledger.recordWritten(scope, 1, [{ id: '1', hash: 'a', destinationKey: '1' }]);
      for (const other of others) {
        expect((await ledger.classify(other, [{ id: '1', hash: 'a' }]))[0]?.state).toBe('new');
        expect(await ledger.markSeen(other, 5, ['1'])).toBe(0);
        expect(await ledger.markDeleted(other, ['1'])).toBe(0);
      }
      expect((await ledger.get(scope, ['1']))[0]?.generation).toBe(1);
    });

    it('forgets the hashes of one scope: its records compare changed, all else stays', async () => {
      const other: LedgerScope = { ...scope, resource: 'events' };
      await ledger.recordWritten(scope, 3, [
        { id: '1', hash: 'a', destinationKey: 'k1' },
        { id: '2', hash: 'b', destinationKey: 'k2' },
      ]);
      await ledger.markDeleted(scope, ['2']);
      await ledger.recordWritten(other, 3, [{ id: '1', hash: 'a', destinationKey: 'k1' }]);
      expect(await ledger.forgetHashes(scope)).toBe(2);
      expect(await ledger.classify(scope, [{ id: '1', hash: 'a' }])).toEqual([
        { id: '1', state: 'changed', destinationKey: 'k1', seenGeneration: 3 },
      ]);
      expect((await ledger.classify(other, [{ id: '1', hash: 'a' }]))[0]?.state).toBe('unchanged');
      // A pass's counts hold: what it saw is still seen, what was deleted still deleted.
      expect(await ledger.countSeen(scope, 3)).toBe(1);
      expect(await ledger.counts(scope)).toEqual({ live: 1, deleted: 1 });
      // Seen by the pass before its table was made anew, and not written since: the one the
      // new table lacks. Written again, it is not.
      expect(await ledger.countForgottenSeen(scope, 3)).toBe(1);
      expect(await ledger.countForgottenSeen(scope, 4)).toBe(0);
      expect(await ledger.countForgottenSeen(other, 3)).toBe(0);
      await ledger.recordWritten(scope, 3, [{ id: '1', hash: 'c', destinationKey: 'k1' }]);
      expect(await ledger.countForgottenSeen(scope, 3)).toBe(0);
    });

    it('handles a page of 1,000 records in one call each', async () => {
      const page = ids(1000);
      await ledger.recordWritten(
        scope,
        1,
        page.map((id) => ({ id, hash: `h${id}`, destinationKey: id })),
      );
      const classified = await ledger.classify(
        scope,
        page.map((id, i) => ({ id, hash: i < 10 ? 'different' : `h${id}` })),
      );
      expect(classified.filter((c) => c.state === 'changed')).toHaveLength(10);
      expect(classified.filter((c) => c.state === 'unchanged')).toHaveLength(990);
      expect(await ledger.markSeen(scope, 2, page)).toBe(1000);
      expect(await ledger.counts(scope)).toEqual({ live: 1000, deleted: 0 });
    });

    it('starts a pass, resumes it with its checkpoints, completes it once', async () => {
      const started = new Date('2027-05-01T10:00:00Z');
      const first = await ledger.beginPass(pass, { at: started });
      expect(first).toEqual({ generation: 1, startedAt: started, resumed: false, checkpoints: {} });

      await ledger.saveCheckpoint(pass, 1, { page: 3, window: ['2027-01-01', '2027-02-01'] });
      await ledger.saveCheckpoint(pass, 1, { page: 7 }, 'origin=API');
      await ledger.saveCheckpoint(pass, 1, { page: 4 });

      const resumed = await ledger.beginPass(pass);
      expect(resumed).toEqual({
        generation: 1,
        startedAt: started,
        resumed: true,
        checkpoints: { '': { page: 4 }, 'origin=API': { page: 7 } },
      });
      expect((await ledger.readCheckpoints(pass))?.checkpoints).toEqual(resumed.checkpoints);

      await ledger.clearCheckpoints(pass, 'origin=API');
      expect((await ledger.readCheckpoints(pass))?.checkpoints).toEqual({ '': { page: 4 } });

      const done = new Date('2027-05-01T11:00:00Z');
      await ledger.completePass(pass, 1, done);
      await ledger.completePass(pass, 1, done); // a retried activity
      expect(await ledger.readCheckpoints(pass)).toBeUndefined();
      expect(await ledger.passStatus(pass)).toEqual({
        open: null,
        lastCompleted: { generation: 1, startedAt: started, completedAt: done },
      });

      const next = await ledger.beginPass(pass);
      expect(next).toMatchObject({ generation: 2, resumed: false, checkpoints: {} });
      expect((await ledger.passStatus(pass)).open?.generation).toBe(2);
    });

    it('refuses checkpoints and completion from a pass that was restarted', async () => {
      const old = await ledger.beginPass(pass);
      await ledger.saveCheckpoint(pass, old.generation, { page: 9 });
      const fresh = await ledger.beginPass(pass, { restart: true });
      expect(fresh.generation).toBe(old.generation + 1);
      expect(fresh.checkpoints).toEqual({});
      await expect(ledger.saveCheckpoint(pass, old.generation, { page: 10 })).rejects.toThrow(
        PassSupersededError,
      );
      await expect(ledger.completePass(pass, old.generation)).rejects.toThrow(PassSupersededError);
      // It names the store, which is the cause when workers of a task queue do not share one.
      await expect(ledger.completePass(pass, old.generation)).rejects.toThrow(
        `is no longer the open pass in the store ${ledger.location}: a newer pass of this mirror began, or this worker's EBSYNC_STORE_URL is not the store the pass began in`,
      );
      expect(ledger.location).not.toMatch(/:[^/@]*@/);
      expect(await ledger.readCheckpoints(pass)).toMatchObject({
        generation: fresh.generation,
        checkpoints: {},
      });
      // Nothing open: a checkpoint has no pass to belong to.
      await ledger.completePass(pass, fresh.generation);
      await expect(ledger.saveCheckpoint(pass, fresh.generation, {})).rejects.toThrow(
        PassSupersededError,
      );
    });

    it('versions each checkpoint: a save over a version someone replaced is refused', async () => {
      const { generation } = await ledger.beginPass(pass);
      expect(await ledger.readCheckpoint(pass, generation, 'leads')).toBeUndefined();
      expect(
        await ledger.saveCheckpoint(pass, generation, { n: 1 }, 'leads', { replaces: 0 }),
      ).toBe(1);
      expect(await ledger.readCheckpoint(pass, generation, 'leads')).toEqual({
        checkpoint: { n: 1 },
        version: 1,
      });
      // Two attempts read version 1; the first to save wins, the second is told to read again.
      expect(
        await ledger.saveCheckpoint(pass, generation, { n: 2 }, 'leads', { replaces: 1 }),
      ).toBe(2);
      await expect(
        ledger.saveCheckpoint(pass, generation, { n: 3 }, 'leads', { replaces: 1 }),
      ).rejects.toThrow(CheckpointConflictError);
      expect(await ledger.readCheckpoint(pass, generation, 'leads')).toEqual({
        checkpoint: { n: 2 },
        version: 2,
      });
      // Without `replaces` a save always lands; other partitions count their own versions.
      expect(await ledger.saveCheckpoint(pass, generation, { n: 4 }, 'leads')).toBe(3);
      expect(
        await ledger.saveCheckpoint(pass, generation, { e: 1 }, 'events', { replaces: 0 }),
      ).toBe(1);
      // A new pass starts every checkpoint afresh; the old generation's are not its own.
      const next = await ledger.beginPass(pass, { restart: true });
      expect(await ledger.readCheckpoint(pass, next.generation, 'leads')).toBeUndefined();
      expect(await ledger.readCheckpoint(pass, generation, 'leads')).toBeUndefined();
      expect(
        await ledger.saveCheckpoint(pass, next.generation, { n: 1 }, 'leads', { replaces: 0 }),
      ).toBe(1);
    });

    it('numbers generations per connection and destination, across pass names', async () => {
      const leads = await ledger.beginPass(pass);
      const events = await ledger.beginPass({ ...pass, pass: 'events:full' });
      const elsewhere = await ledger.beginPass({ ...pass, destination: 'postgres://h:5432/x' });
      expect([leads.generation, events.generation, elsewhere.generation]).toEqual([1, 2, 1]);
    });

    it('keeps everything across a reopen and applies each migration once', async () => {
      await ledger.recordWritten(scope, 1, [{ id: '1', hash: 'a', destinationKey: '1' }]);
      await ledger.beginPass(pass);
      await ledger.close();
      ledger = await backend.open(location);
      expect((await ledger.get(scope, ['1']))[0]?.hash).toBe('a');
      expect((await ledger.beginPass(pass)).resumed).toBe(true);
      const versions = await backend.query(
        location,
        'SELECT version FROM schema_migrations ORDER BY version',
      );
      expect(versions.map((v) => Number(v.version))).toEqual(
        LEDGER_MIGRATIONS.map((m) => m.version),
      );
    });

    it('writes every lead once more after version 6, whose column of the budget read nothing before', async () => {
      const events: LedgerScope = { ...scope, resource: 'events' };
      await ledger.recordWritten({ ...scope, resource: 'leads' }, 1, [
        { id: '1', hash: 'a', destinationKey: '1' },
      ]);
      await ledger.recordWritten(events, 1, [{ id: '1', hash: 'a', destinationKey: '1' }]);
      await ledger.close();
      // A store from before version 6.
      await backend.query(location, 'DELETE FROM schema_migrations WHERE version = 6');
      ledger = await backend.open(location);
      const leads = await ledger.classify({ ...scope, resource: 'leads' }, [
        { id: '1', hash: 'a' },
      ]);
      expect(leads[0]?.state).toBe('changed');
      expect((await ledger.classify(events, [{ id: '1', hash: 'a' }]))[0]?.state).toBe('unchanged');
    });

    it('writes every Pipedrive event once more after version 8, whose close date was a UTC day', async () => {
      const at = (destination: string, resource: LedgerScope['resource']): LedgerScope => ({
        connectionId: 'c1',
        destination,
        resource,
      });
      const written = [
        at('pipedrive:api.pipedrive.com', 'events'),
        at('pipedrive:api.pipedrive.com', 'leads'),
        at('hubspot:api.hubapi.com', 'events'),
        at('sqlite:/tmp/m.db', 'events'),
      ];
      for (const s of written) {
        await ledger.recordWritten(s, 1, [{ id: '1', hash: 'a', destinationKey: '1' }]);
      }
      await ledger.close();
      // A store from before version 8.
      await backend.query(location, 'DELETE FROM schema_migrations WHERE version = 8');
      ledger = await backend.open(location);
      const states = [];
      for (const s of written) {
        states.push((await ledger.classify(s, [{ id: '1', hash: 'a' }]))[0]?.state);
      }
      expect(states).toEqual(['changed', 'unchanged', 'unchanged', 'unchanged']);
    });

    it('keeps what endpoints were last sent of a record apart from what was written', async () => {
      await ledger.recordWritten(scope, 1, [{ id: '1', hash: 'a', destinationKey: '1' }]);
      const forwarded = async (id: string) => (await ledger.get(scope, [id]))[0]?.forwardedHash;
      expect(await forwarded('1')).toBeNull();
      // An id the ledger does not have is passed over, not made.
      await ledger.markForwarded(scope, [
        { id: '1', hash: 'a' },
        { id: '9', hash: 'x' },
      ]);
      expect(await forwarded('1')).toBe('a');
      expect(await ledger.get(scope, ['9'])).toEqual([]);
      // A later write (a pass's), a table made anew, a deletion mark: none of them is a send.
      await ledger.recordWritten(scope, 2, [{ id: '1', hash: 'b', destinationKey: '1' }]);
      await ledger.forgetHashes(scope);
      await ledger.markDeleted(scope, ['1']);
      expect(await forwarded('1')).toBe('a');
      await ledger.markForwarded(scope, [{ id: '1', hash: FORWARDED_DELETED }]);
      expect(await forwarded('1')).toBe(FORWARDED_DELETED);
      // Other scopes are their own.
      expect(
        (await ledger.get({ ...scope, resource: 'events' }, ['1']))[0]?.forwardedHash,
      ).toBeUndefined();
    });

    it('takes every entry of a store from before version 7 as sent to the endpoints already', async () => {
      await ledger.recordWritten(scope, 1, [
        { id: '1', hash: 'a', destinationKey: '1' },
        { id: '2', hash: 'b', destinationKey: '2' },
      ]);
      await ledger.markDeleted(scope, ['2']);
      await ledger.close();
      // A store from before version 7: no column for it.
      await backend.query(location, 'ALTER TABLE ledger_entries DROP COLUMN forwarded_hash');
      await backend.query(location, 'DELETE FROM schema_migrations WHERE version = 7');
      ledger = await backend.open(location);
      const entries = await ledger.get(scope, ['1', '2']);
      expect(Object.fromEntries(entries.map((e) => [e.id, e.forwardedHash]))).toEqual({
        '1': 'a',
        '2': FORWARDED_DELETED,
      });
      expect((await ledger.classify(scope, [{ id: '1', hash: 'a' }]))[0]?.state).toBe('unchanged');
    });

    it('gives a destination one writer, at once too; forgetting the mirror frees it', async () => {
      const dest = 'sqlite:/tmp/shared.db';
      expect(await ledger.claimDestination(dest, 'a')).toEqual([]);
      // Again: the same writer, nothing to refuse.
      expect(await ledger.claimDestination(dest, 'a')).toEqual([]);
      expect(await ledger.claimDestination(dest, 'b')).toEqual(['a']);
      // Looking claims nothing.
      expect(await ledger.destinationWriters(dest)).toEqual(['a']);
      expect(await ledger.destinationWriters('sqlite:/tmp/none.db')).toEqual([]);
      expect(await ledger.claimDestination('sqlite:/tmp/none.db', 'c')).toEqual([]);
      // Another destination is its own.
      expect(await ledger.claimDestination('sqlite:/tmp/other.db', 'b')).toEqual([]);
      // Two connections claiming a new destination at once, from two openers of the store:
      // exactly one gets it.
      const second = await backend.open(location);
      try {
        const answers = await Promise.all([
          ledger.claimDestination('sqlite:/tmp/new.db', 'x'),
          second.claimDestination('sqlite:/tmp/new.db', 'y'),
        ]);
        expect(answers.filter((a) => a.length === 0)).toHaveLength(1);
        expect(answers.flat().sort()).toHaveLength(1);
      } finally {
        await second.close();
      }
      // Forgetting takes a's entries, passes and claim in that destination, nothing else.
      const inShared: LedgerScope = { connectionId: 'a', destination: dest, resource: 'leads' };
      const elsewhere: LedgerScope = { ...inShared, destination: 'sqlite:/tmp/other.db' };
      await ledger.recordWritten(inShared, 1, [
        { id: '1', hash: 'h', destinationKey: '1' },
        { id: '2', hash: 'h', destinationKey: '2' },
      ]);
      await ledger.recordWritten(elsewhere, 1, [{ id: '1', hash: 'h', destinationKey: '1' }]);
      const key: PassKey = { connectionId: 'a', destination: dest, pass: 'leads:full' };
      const begun = await ledger.beginPass(key);
      await ledger.saveCheckpoint(key, begun.generation, { page: 2 });
      expect(await ledger.forgetDestination(dest, 'a')).toEqual({ entries: 2, held: true });
      expect(await ledger.get(inShared, ['1', '2'])).toEqual([]);
      expect(await ledger.get(elsewhere, ['1'])).toHaveLength(1);
      expect(await ledger.readCheckpoints(key)).toBeUndefined();
      expect(await ledger.claimDestination(dest, 'b')).toEqual([]);
      // A pass begun with no entry yet is something held; after it, nothing is, and it says so.
      expect((await ledger.beginPass(key)).generation).toBe(1);
      expect(await ledger.forgetDestination(dest, 'a')).toEqual({ entries: 0, held: true });
      expect(await ledger.forgetDestination(dest, 'a')).toEqual({ entries: 0, held: false });
      expect(await ledger.claimDestination(dest, 'a')).toEqual(['b']);
    });

    it('takes every connection a destination held before version 9 as a writer of it', async () => {
      const at = (connectionId: string, destination: string): LedgerScope => ({
        connectionId,
        destination,
        resource: 'leads',
      });
      await ledger.recordWritten(at('a', 'sqlite:/tmp/one.db'), 0, [
        { id: '1', hash: 'h', destinationKey: '1' },
      ]);
      await ledger.recordWritten(at('b', 'sqlite:/tmp/one.db'), 0, [
        { id: '1', hash: 'h', destinationKey: '1' },
      ]);
      // A pass that began and wrote nothing yet still made its destination its own.
      await ledger.beginPass({ connectionId: 'c', destination: 'sqlite:/tmp/two.db', pass: 'p' });
      await ledger.close();
      await backend.query(location, 'DROP TABLE destination_writers');
      await backend.query(location, 'DELETE FROM schema_migrations WHERE version = 9');
      ledger = await backend.open(location);
      // Mixed already: each is told of the other.
      expect(await ledger.claimDestination('sqlite:/tmp/one.db', 'a')).toEqual(['b']);
      expect(await ledger.claimDestination('sqlite:/tmp/one.db', 'b')).toEqual(['a']);
      expect(await ledger.claimDestination('sqlite:/tmp/two.db', 'c')).toEqual([]);
      expect(await ledger.claimDestination('sqlite:/tmp/two.db', 'a')).toEqual(['c']);
    });

    it('hands out one request slot per interval per connection, to every opener of the store', async () => {
      // Long intervals, so the milliseconds the calls themselves take cannot blur the slots.
      const interval = 10_000;
      const other = await backend.open(location);
      try {
        const waits = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            (i % 2 === 0 ? ledger : other).reserveRequest('c1', interval),
          ),
        );
        const sorted = [...waits].sort((a, b) => a - b);
        sorted.forEach((wait, i) => {
          expect(wait).toBeGreaterThan(i * interval - 1_000);
          expect(wait).toBeLessThanOrEqual(i * interval);
        });
        // Another connection has slots of its own.
        expect(await other.reserveRequest('c2', interval)).toBe(0);
      } finally {
        await other.close();
      }
    });

    it("holds a connection's requests for a Retry-After, without shortening a longer hold", async () => {
      await ledger.holdRequests('c1', 60_000);
      await ledger.holdRequests('c1', 5_000);
      const wait = await ledger.reserveRequest('c1', 100);
      expect(wait).toBeGreaterThan(59_000);
      expect(wait).toBeLessThanOrEqual(60_000);
      expect(await ledger.reserveRequest('c2', 100)).toBe(0);
    });

    it('refuses a store migrated by a newer ebsync', async () => {
      await ledger.close();
      await backend.query(
        location,
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', '2030-01-01T00:00:00Z')",
      );
      await expect(backend.open(location)).rejects.toThrow(StoreMigrationError);
      ledger = await backend.open(await backend.fresh());
    });
  });
}
