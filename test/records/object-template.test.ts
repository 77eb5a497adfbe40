import { setFlagsFromString } from 'node:v8';
import { runInThisContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { toMirrorRecord } from '../../activities/mirror/write-records.js';
import { canonicalRecord } from '../../records/canonical.js';
import { objectTemplate } from '../../records/object-template.js';
import { TABLES } from '../../destinations/tables.js';

// V8's own answer to "is this object in fast mode", through its natives syntax (allowed from
// here on; the function is compiled after the flag is set).
setFlagsFromString('--allow-natives-syntax');
const hasFastProperties = runInThisContext('(o) => %HasFastProperties(o)') as (
  o: object,
) => boolean;

const NAMES = Array.from({ length: 60 }, (_, i) => `column_${i}`);

describe('objectTemplate', () => {
  it('holds the names in order, each null', () => {
    const template = objectTemplate(NAMES);
    expect(Object.keys(template)).toEqual(NAMES);
    expect(Object.values(template).every((v) => v === null)).toBe(true);
  });

  it('keeps copies given every value in fast mode, where names set one by one do not', () => {
    // The case the template exists for: if V8 kept this fast too, the template would be moot.
    // (Names of their own: once a template made a layout for names in an order, V8 follows it
    // for any object given those names in that order.)
    const byName: Record<string, unknown> = {};
    for (const name of NAMES) byName[`by_name_${name}`] = 'x';
    expect(hasFastProperties(byName)).toBe(false);

    const template = objectTemplate(NAMES);
    for (let round = 0; round < 3; round++) {
      const copy: Record<string, unknown> = { ...template };
      NAMES.forEach((name, i) => (copy[name] = i % 3 === 0 ? i : i % 3 === 1 ? `v${i}` : null));
      expect(hasFastProperties(copy)).toBe(true);
      expect(copy.column_3).toBe(3);
    }
  });

  it("gives a mirror row every column of its table, in the table's order, in fast mode", () => {
    const record = canonicalRecord('leads', {
      id: '41',
      type: 'lead',
      attributes: {
        id: 41,
        email: 'a@example.com',
        first_name: 'Ada',
        created_at: '2026-05-01T09:30:00Z',
      },
      relationships: {},
    });
    const row = toMirrorRecord(record);
    expect(Object.keys(row.attributes)).toEqual(TABLES.leads.columns.map((c) => c.name));
    expect(row.attributes.email).toBe('a@example.com');
    expect(row.attributes.first_name).toBe('Ada');
    expect(hasFastProperties(row.attributes)).toBe(true);
  });
});
