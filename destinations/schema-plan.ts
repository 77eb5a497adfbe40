import { DestinationSchemaError } from './errors.js';
import type { ColumnType } from './record.js';
import { SYSTEM_COLUMNS, type ColumnSpec, type TableSpec } from './tables.js';

/** The SQL type of each column type in one engine, as its catalogue reports it. */
export type TypeNames = Readonly<Record<ColumnType, string>>;

export interface TablePlan {
  readonly table: TableSpec;
  /** System columns first, then the attributes: the table's full column list. */
  readonly columns: readonly ColumnSpec[];
  readonly create: boolean;
  readonly add: readonly ColumnSpec[];
}

/** Every column of a table, `id`, `record`, `deleted_at` and `synced_at` first. */
export function columnsOf(table: TableSpec): readonly ColumnSpec[] {
  return [...SYSTEM_COLUMNS, ...table.columns];
}

/**
 * What ensureSchema has to do to one table, given the columns it has now (name → SQL type,
 * undefined when the table does not exist). A column of another type is a person's call:
 * refused, never altered.
 */
export function planTable(
  table: TableSpec,
  existing: ReadonlyMap<string, string> | undefined,
  types: TypeNames,
): TablePlan {
  const columns = columnsOf(table);
  if (!existing) return { table, columns, create: true, add: [] };
  const add: ColumnSpec[] = [];
  for (const column of columns) {
    const found = existing.get(column.name);
    if (found === undefined) add.push(column);
    else if (found.toLowerCase() !== types[column.type].toLowerCase()) {
      throw new DestinationSchemaError(
        `column ${table.table}.${column.name} is ${found}, ebsync writes ${types[column.type]}: rename or drop that column, or mirror into another database`,
      );
    }
  }
  return { table, columns, create: false, add };
}

/** Quotes an identifier the same way in both engines (SQL standard double quotes). */
export const quoteIdentifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Column definitions of CREATE TABLE: `id` the key, `id`, `record` and `synced_at` required
 * (said of `id` too, since a SQLite rowid table's PRIMARY KEY alone would take a NULL).
 */
export function columnDefinitions(plan: TablePlan, types: TypeNames): string[] {
  return plan.columns.map((c) => {
    const required = ['id', 'record', 'synced_at'].includes(c.name) ? ' NOT NULL' : '';
    const key = c.name === 'id' ? ' PRIMARY KEY' : '';
    return `${quoteIdentifier(c.name)} ${types[c.type]}${key}${required}`;
  });
}
