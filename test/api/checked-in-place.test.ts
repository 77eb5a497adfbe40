import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  appointmentAttributesSchema,
  eventAttributesSchema,
  leadAttributesSchema,
  leadBookingAttributesSchema,
  leadBookingSchema,
  leadSchema,
  listSchema,
} from '../../api/index.js';
import { checkedInPlace, returnsInput } from '../../api/schemas/checked-in-place.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

/** The item schema as it was before attributes were checked in place: zod's own copy. */
function copyingItem(attributes: z.ZodType) {
  return z.looseObject({
    id: z.string(),
    type: z.string(),
    attributes,
    relationships: z.record(z.string(), z.unknown()).optional(),
  });
}

const copyingInclude = z.looseObject({
  id: z.string(),
  type: z.string(),
  attributes: z.record(z.string(), z.unknown()),
  relationships: z.record(z.string(), z.unknown()).optional(),
});

function copyingList(attributes: z.ZodType) {
  return z.looseObject({
    meta: z.looseObject({ status: z.literal('ok') }),
    data: z.array(copyingItem(attributes)),
    included: z.array(copyingInclude).optional(),
  });
}

function issuesOf(schema: z.ZodType, value: unknown): string[] {
  const parsed = schema.safeParse(value);
  return parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
}

describe('records checked in place', () => {
  let sandbox: TestSandbox;
  beforeAll(async () => {
    sandbox = await startTestSandbox({ seed: { leads: 150, events: 40, seed: 'in-place' } });
  });
  afterAll(async () => {
    expect(sandbox.internalErrors).toEqual([]);
    await sandbox.close();
  });

  it.each([
    [
      'leads with their bookings',
      '/api/v1/leads',
      { include: 'lead_bookings' },
      leadSchema,
      leadAttributesSchema,
    ],
    ['lead bookings', '/api/v1/lead_bookings', {}, leadBookingSchema, leadBookingAttributesSchema],
  ] as const)(
    '%s: the same values as the copying schema, in the objects that came',
    async (_, path, query, item, attributes) => {
      for (const page of [1, 2]) {
        const answer = await sandbox.request('GET', path, { query: { per: 100, page, ...query } });
        expect(answer.status).toBe(200);
        const body: unknown = JSON.parse(answer.text);
        const copied = copyingList(attributes).parse(JSON.parse(answer.text));
        const inPlace = listSchema(item).parse(body);
        expect(inPlace).toEqual(copied);
        const sent = body as { data: { attributes: object; relationships?: object }[] };
        expect(inPlace.data.length).toBeGreaterThan(0);
        inPlace.data.forEach((record, i) => {
          expect(record.attributes).toBe(sent.data[i]!.attributes);
          if (record.relationships) expect(record.relationships).toBe(sent.data[i]!.relationships);
        });
      }
    },
  );

  it('refuses what the copying schema refuses, with the same paths and messages', async () => {
    const answer = await sandbox.request('GET', '/api/v1/leads', { query: { per: 2 } });
    const good = JSON.parse(answer.text) as {
      data: { attributes: unknown; relationships?: unknown }[];
    };
    const attributesOf = (body: typeof good, i: number) =>
      body.data[i]!.attributes as Record<string, unknown>;
    const broken: ((body: typeof good) => void)[] = [
      (body) => (attributesOf(body, 0).email = 5),
      (body) => {
        attributesOf(body, 1).id = 'seven';
        attributesOf(body, 1).spam = 'yes';
      },
      (body) => delete attributesOf(body, 0).id,
      (body) => (body.data[0]!.attributes = null),
      (body) => (body.data[1]!.attributes = [1]),
      (body) => (body.data[0]!.relationships = 'none'),
    ];
    for (const breakIt of broken) {
      const body = structuredClone(good);
      breakIt(body);
      const expected = issuesOf(copyingList(leadAttributesSchema), body);
      expect(expected.length).toBeGreaterThan(0);
      const actual = issuesOf(listSchema(leadSchema), body);
      // Same fields named; a non-object relationships is named in the words of our check.
      expect(actual.map((line) => line.split(':')[0])).toEqual(
        expected.map((line) => line.split(':')[0]),
      );
      if (!expected.some((line) => line.includes('relationships')))
        expect(actual).toEqual(expected);
    }
  });
});

describe('returnsInput', () => {
  it('holds for every attribute schema the mirror reads', () => {
    for (const schema of [
      leadAttributesSchema,
      eventAttributesSchema,
      leadBookingAttributesSchema,
      leadBookingSchema,
      appointmentAttributesSchema,
    ]) {
      expect(returnsInput(schema)).toBe(true);
    }
  });

  it.each([
    ['a transform', z.string().transform((s) => s.length)],
    ['an overwriting check', z.string().trim()],
    ['a default', z.number().default(1)],
    ['a nested default', z.object({ a: z.array(z.string().optional().default('x')) })],
    ['a pipe', z.string().pipe(z.coerce.number())],
    ['a readonly copy', z.array(z.string()).readonly()],
    ['a catch', z.number().catch(0)],
  ])('fails for %s, and such an object is parsed by zod as before', (_, field) => {
    expect(returnsInput(field)).toBe(false);
    const shape = z.looseObject({ field: field as z.ZodType, other: z.unknown() });
    expect(checkedInPlace(shape)).toBe(shape);
  });

  it('leaves a strict or catch-all object to zod', () => {
    const strict = z.strictObject({ a: z.string() });
    const catchall = z.object({ a: z.string() }).catchall(z.number());
    expect(checkedInPlace(strict)).toBe(strict);
    expect(checkedInPlace(catchall)).toBe(catchall);
    const loose = z.looseObject({ a: z.string() });
    const checked = checkedInPlace(loose);
    expect(checked).not.toBe(loose);
    const value = { a: 'x', b: { deep: [1] } };
    expect(checked.parse(value)).toBe(value);
  });
});
