import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Destination } from '../../destinations/destination.js';
import {
  DestinationRecordError,
  DestinationSchemaError,
  DestinationWriteError,
} from '../../destinations/errors.js';
import type { JsonValue, MirrorRecord } from '../../destinations/record.js';
import { ALL_TABLES, TABLES, type TableSpec } from '../../destinations/tables.js';

/** How the suite reaches one engine. Rows come back as plain JSON-like values. */
export interface DestinationBackend {
  /** A new, empty destination target (`sqlite:PATH` or a postgres:// URL). */
  fresh(): Promise<string>;
  open(target: string): Destination;
  /** Every row of a table by id: timestamps as ISO strings, booleans, numbers, parsed JSON. */
  rows(target: string, table: string): Promise<Record<string, JsonValue>[]>;
  /** Makes the database itself refuse to store a row with this id (a trigger). */
  refuseId(target: string, table: string, id: string): Promise<void>;
  /** Names of the table's columns as the database lists them. */
  columns(target: string, table: string): Promise<string[]>;
  /** Removes the table as a user starting over would (SQLite: the whole file). */
  removeTable(target: string, table: string): Promise<void>;
}

export function leadRecord(
  id: string,
  changes: Partial<Record<string, JsonValue>> = {},
): MirrorRecord {
  const attributes: Record<string, JsonValue> = {
    email: `lead${id}@example.com`,
    first_name: 'Ana',
    times_contacted: 2,
    estimated_budget_cents: 125_000,
    created_at: '2027-01-05T09:30:00-05:00',
    event_date: '2027-06-12',
    spam: false,
    venue_latitude: 40.7128,
    custom_fields: [{ label: 'Colour', value: 'teal' }],
    ...changes,
  };
  return { resource: 'leads', id, attributes, raw: { id, type: 'lead', attributes } };
}

const batchOf = (n: number, from = 1) =>
  Array.from({ length: n }, (_, i) => leadRecord(String(from + i)));

const T1 = new Date('2027-02-01T00:00:00.000Z');
const T2 = new Date('2027-02-02T00:00:00.000Z');

/** The same behaviour, asserted on every database destination. */
export function describeDestination(name: string, backend: DestinationBackend): void {
  describe(`${name} destination`, () => {
    let target: string;
    let destination: Destination;

    beforeEach(async () => {
      target = await backend.fresh();
      destination = backend.open(target);
    });
    afterEach(async () => {
      await destination.close();
    });

    it('creates the five tables with every column of the spec, once', async () => {
      const first = await destination.ensureSchema(ALL_TABLES);
      expect([...first.createdTables].sort()).toEqual([
        'appointments',
        'event_bookings',
        'events',
        'lead_bookings',
        'leads',
      ]);
      for (const table of ALL_TABLES) {
        const columns = await backend.columns(target, table.table);
        expect(columns.sort()).toEqual(
          ['id', 'record', 'deleted_at', 'synced_at', ...table.columns.map((c) => c.name)].sort(),
        );
      }
      expect(await destination.ensureSchema(ALL_TABLES)).toEqual({
        createdTables: [],
        addedColumns: [],
      });
    });

    it('writes typed columns and the whole record', async () => {
      const record = leadRecord('1042');
      const result = await destination.upsert('leads', [record], T1);
      expect(result).toEqual({ inserted: 1, updated: 0, unchanged: 0, keys: ['1042'] });
      const [row] = await backend.rows(target, 'leads');
      expect(row).toMatchObject({
        id: '1042',
        email: 'lead1042@example.com',
        times_contacted: 2,
        estimated_budget_cents: 125_000,
        // Stored as UTC whatever offset the record carried.
        created_at: '2027-01-05T14:30:00.000Z',
        event_date: '2027-06-12',
        spam: false,
        venue_latitude: 40.7128,
        custom_fields: [{ label: 'Colour', value: 'teal' }],
        last_name: null,
        record: record.raw,
        deleted_at: null,
        synced_at: T1.toISOString(),
      });
    });

    it('writes the same batch twice as once: the second time changes nothing', async () => {
      const batch = batchOf(50);
      expect(await destination.upsert('leads', batch, T1)).toMatchObject({
        inserted: 50,
        updated: 0,
        unchanged: 0,
      });
      const before = await backend.rows(target, 'leads');
      expect(await destination.upsert('leads', batch, T2)).toMatchObject({
        inserted: 0,
        updated: 0,
        unchanged: 50,
      });
      expect(await backend.rows(target, 'leads')).toEqual(before);
    });

    it('rewrites only the rows whose record changed', async () => {
      await destination.upsert('leads', batchOf(10), T1);
      const changed = [...batchOf(10)];
      changed[3] = leadRecord('4', { first_name: 'Bea' });
      expect(await destination.upsert('leads', changed, T2)).toMatchObject({
        inserted: 0,
        updated: 1,
        unchanged: 9,
      });
      const rows = await backend.rows(target, 'leads');
      const moved = rows.filter((r) => r.synced_at === T2.toISOString()).map((r) => r.id);
      expect(moved).toEqual(['4']);
      expect(rows.find((r) => r.id === '4')?.first_name).toBe('Bea');
    });

    it('keeps the last of two records with the same id in one batch', async () => {
      const result = await destination.upsert('leads', [
        leadRecord('1', { first_name: 'Old' }),
        leadRecord('1', { first_name: 'New' }),
      ]);
      expect(result).toMatchObject({ inserted: 1, keys: ['1', '1'] });
      expect((await backend.rows(target, 'leads')).map((r) => r.first_name)).toEqual(['New']);
    });

    it('writes a record whose value its column cannot hold, that column empty, and says so', async () => {
      await destination.upsert('leads', batchOf(3), T1);
      const result = await destination.upsert(
        'leads',
        [
          leadRecord('2', { first_name: 'Changed' }),
          leadRecord('8', { estimated_budget_cents: 12.5 }),
          leadRecord('9', { created_at: '2027-01-05 09:30', event_date: '2027-02-30' }),
        ],
        T2,
      );
      expect(result).toMatchObject({ inserted: 2, updated: 1 });
      expect(result.refused).toEqual([
        {
          index: 1,
          code: 'VALUE_DOES_NOT_FIT',
          message:
            'estimated_budget_cents must be a whole number of cents, got a fraction: left empty in its column (the record column holds it)',
          partial: true,
        },
        {
          index: 2,
          code: 'VALUE_DOES_NOT_FIT',
          message:
            'event_date must be a date YYYY-MM-DD, got a string of 10 characters; created_at must be an ISO 8601 timestamp with Z or an offset, got a string of 16 characters: left empty in their columns (the record column holds it)',
          partial: true,
        },
      ]);
      const rows = new Map((await backend.rows(target, 'leads')).map((r) => [r.id as string, r]));
      expect(rows.get('2')?.first_name).toBe('Changed');
      expect(rows.get('8')?.estimated_budget_cents).toBeNull();
      expect(rows.get('9')).toMatchObject({ created_at: null, event_date: null });
    });

    it('refuses a batch holding an attribute that is no column, and writes none of it', async () => {
      await destination.upsert('leads', batchOf(3), T1);
      const before = await backend.rows(target, 'leads');
      const attempt = destination.upsert(
        'leads',
        [leadRecord('2', { first_name: 'Changed' }), leadRecord('9', { nickname: 'x' })],
        T2,
      );
      await expect(attempt).rejects.toThrow(DestinationRecordError);
      await expect(attempt).rejects.toThrow(/nickname is not a column of leads/);
      expect(await backend.rows(target, 'leads')).toEqual(before);
    });

    it('rolls back the whole batch when the database refuses one row', async () => {
      await destination.upsert('leads', batchOf(3), T1);
      const before = await backend.rows(target, 'leads');
      await backend.refuseId(target, 'leads', '5');
      const batch = [leadRecord('1', { first_name: 'Changed' }), leadRecord('4'), leadRecord('5')];
      const attempt = destination.upsert('leads', batch, T2);
      await expect(attempt).rejects.toThrow(DestinationWriteError);
      await expect(attempt).rejects.toMatchObject({ retryable: false });
      expect(await backend.rows(target, 'leads')).toEqual(before);
    });

    it('marks rows deleted once, and a record written again is live again', async () => {
      await destination.upsert('leads', batchOf(3), T1);
      const marking = Date.now() - 1_000;
      expect(await destination.markDeleted('leads', ['2', '3', 'unknown'], T2)).toEqual({
        marked: 2,
      });
      expect(await destination.markDeleted('leads', ['2'], new Date())).toEqual({ marked: 0 });
      // The same mark again (a retried attempt): the rows it marked count again.
      expect(await destination.markDeleted('leads', ['2', '3'], T2)).toEqual({ marked: 2 });
      const rows = await backend.rows(target, 'leads');
      expect(rows.map((r) => [r.id, r.deleted_at])).toEqual([
        ['1', null],
        ['2', T2.toISOString()],
        ['3', T2.toISOString()],
      ]);
      // synced_at says when the row was written (now), whatever time the mark carries.
      for (const row of rows.filter((r) => r.deleted_at !== null)) {
        const synced = typeof row.synced_at === 'string' ? Date.parse(row.synced_at) : Number.NaN;
        expect(synced).toBeGreaterThanOrEqual(marking);
        expect(synced).toBeLessThanOrEqual(Date.now() + 1_000);
      }
      expect(await destination.upsert('leads', [leadRecord('2')], T2)).toMatchObject({
        updated: 1,
      });
      expect(
        (await backend.rows(target, 'leads')).find((r) => r.id === '2')?.deleted_at,
      ).toBeNull();
    });

    it('adds the columns a newer ebsync knows to an existing table, keeping its rows', async () => {
      const older: TableSpec = { ...TABLES.leads, columns: TABLES.leads.columns.slice(0, 4) };
      await destination.ensureSchema([older]);
      await destination.upsert('leads', [
        { ...leadRecord('1'), attributes: { email: 'a@example.com', first_name: 'Ana' } },
      ]);
      await destination.close();

      destination = backend.open(target);
      const changes = await destination.ensureSchema([TABLES.leads]);
      expect(changes.createdTables).toEqual([]);
      expect([...changes.addedColumns].sort()).toEqual(
        TABLES.leads.columns
          .slice(4)
          .map((c) => `leads.${c.name}`)
          .sort(),
      );
      const [row] = await backend.rows(target, 'leads');
      expect(row).toMatchObject({ id: '1', email: 'a@example.com', times_contacted: null });
      await destination.upsert('leads', [leadRecord('1')]);
      expect((await backend.rows(target, 'leads'))[0]?.times_contacted).toBe(2);
    });

    it('refuses a table whose column has another type, and says which', async () => {
      const clash: TableSpec = {
        ...TABLES.leads,
        columns: [{ name: 'email', type: 'integer', description: 'not an e-mail' }],
      };
      await destination.ensureSchema([clash]);
      const attempt = destination.ensureSchema([TABLES.leads]);
      await expect(attempt).rejects.toThrow(DestinationSchemaError);
      await expect(attempt).rejects.toThrow(/column leads\.email is/);
    });

    it('says when a table it wrote was removed and made again, and writes into the new one', async () => {
      await destination.ensureSchema(ALL_TABLES);
      await destination.upsert('leads', batchOf(3));
      expect(await destination.ensureTable('leads')).toBe(false);
      await backend.removeTable(target, 'leads');
      // A handle may learn of it only from a write that fails (Postgres keeps no watch on
      // its tables): that failure is one a retry gets past.
      let made = await destination.ensureTable('leads');
      if (!made) {
        await expect(destination.upsert('leads', batchOf(1))).rejects.toMatchObject({
          retryable: true,
        });
        made = await destination.ensureTable('leads');
      }
      expect(made).toBe(true);
      expect(await destination.ensureTable('leads')).toBe(false);
      const again = await destination.upsert('leads', batchOf(3));
      expect(again.inserted).toBe(3);
      expect((await backend.rows(target, 'leads')).map((r) => r.id)).toEqual(['1', '2', '3']);
    });

    it('creates a table on first write when ensureSchema was not called', async () => {
      const event: MirrorRecord = {
        resource: 'events',
        id: '77',
        attributes: {
          title: 'Wedding',
          starting_balance_cents: 250_000,
          starting_balance_currency: 'USD',
          starts_at_date: '2027-09-18',
          canceled: false,
        },
        raw: { id: '77', title: 'Wedding' },
      };
      expect(await destination.upsert('events', [event])).toMatchObject({ inserted: 1 });
      expect((await backend.rows(target, 'events'))[0]).toMatchObject({
        id: '77',
        starting_balance_cents: 250_000,
        starts_at_date: '2027-09-18',
      });
    });

    it.each(ALL_TABLES.map((table) => [table.table, table] as const))(
      'writes every column of %s, each from its own attribute',
      async (_, table) => {
        // A value per column that no other column holds, so a column left out, or one given
        // its neighbour's value, shows.
        const written: Record<string, JsonValue> = {};
        const stored: Record<string, JsonValue> = {};
        table.columns.forEach((column, i) => {
          const day = String((i % 28) + 1).padStart(2, '0');
          const [value, back]: [JsonValue, JsonValue] =
            column.type === 'text'
              ? [`${column.name}-${i}`, `${column.name}-${i}`]
              : column.type === 'integer' || column.type === 'cents'
                ? [1000 + i, 1000 + i]
                : column.type === 'number'
                  ? [i + 0.5, i + 0.5]
                  : column.type === 'boolean'
                    ? [i % 2 === 0, i % 2 === 0]
                    : column.type === 'date'
                      ? [`2027-03-${day}`, `2027-03-${day}`]
                      : column.type === 'timestamp'
                        ? [`2027-03-${day}T05:06:07+01:00`, `2027-03-${day}T04:06:07.000Z`]
                        : [
                            { column: column.name, at: [i] },
                            { column: column.name, at: [i] },
                          ];
          written[column.name] = value;
          stored[column.name] = back;
        });
        const record: MirrorRecord = {
          resource: table.resource,
          id: 'every-column',
          attributes: written,
          raw: { id: 'every-column', attributes: written },
        };
        expect(await destination.upsert(table.resource, [record], T1)).toMatchObject({
          inserted: 1,
        });
        const [row] = await backend.rows(target, table.table);
        expect(row).toEqual({
          ...stored,
          id: 'every-column',
          record: record.raw,
          deleted_at: null,
          synced_at: T1.toISOString(),
        });
      },
    );

    it(`writes a batch of its full size in one call`, async () => {
      const size = destination.capabilities.maxBatchSize;
      expect(size).toBeGreaterThanOrEqual(100);
      expect(await destination.upsert('leads', batchOf(size))).toMatchObject({ inserted: size });
      expect(await backend.rows(target, 'leads')).toHaveLength(size);
    });
  });
}
