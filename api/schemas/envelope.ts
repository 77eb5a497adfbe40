import { z } from 'zod';
import { checkedInPlace, looseRecordSchema } from './checked-in-place.js';

/**
 * Envelopes of every answer. Readers are tolerant: unknown fields pass through
 * (looseObject), so an additive change of the service never breaks a sync.
 */
export const refSchema = z.looseObject({ id: z.string(), type: z.string() });
export const relationshipSchema = z.looseObject({
  data: z.union([refSchema, z.array(refSchema), z.null()]).optional(),
});

/** An item: string data.id, the type name, attributes and (optional) relationships. */
export function itemSchema<A extends z.ZodType>(attributes: A) {
  return z.looseObject({
    id: z.string(),
    type: z.string(),
    attributes: checkedInPlace(attributes),
    relationships: looseRecordSchema.optional(),
  });
}

/** Any sideloaded record: attributes are read loosely, their type names what they are. */
export const includedSchema = z.looseObject({
  id: z.string(),
  type: z.string(),
  attributes: looseRecordSchema,
  relationships: looseRecordSchema.optional(),
});
export type Included = z.infer<typeof includedSchema>;

export const okMetaSchema = z.looseObject({ status: z.literal('ok') });

export function singleSchema<I extends z.ZodType>(item: I) {
  return z.looseObject({
    meta: okMetaSchema,
    data: item,
    included: z.array(includedSchema).optional(),
  });
}

export const listMetaSchema = z.looseObject({
  status: z.literal('ok'),
  total_count: z.number().int().nonnegative().optional(),
  per_page: z.number().int().positive().optional(),
  page: z.number().int().positive().optional(),
  total_pages: z.number().int().nonnegative().optional(),
});
export type ListMeta = z.infer<typeof listMetaSchema>;

export function listSchema<I extends z.ZodType>(item: I) {
  return z.looseObject({
    meta: listMetaSchema,
    data: z.array(item),
    included: z.array(includedSchema).optional(),
  });
}

/** { meta: { status: 'ok' } }: deletes and answer updates. */
export const okSchema = z.looseObject({ meta: okMetaSchema });

/** Money quadruple fields, nullable (null without the pricing permission). */
export function moneyFields<N extends string>(name: N) {
  return {
    [name]: z.string().nullable().optional(),
    [`${name}_cents`]: z.number().int().nullable().optional(),
    [`${name}_currency`]: z.string().nullable().optional(),
    [`${name}_formatted`]: z.string().nullable().optional(),
  } as unknown as {
    [K in N | `${N}_currency` | `${N}_formatted`]: OptionalNullable<z.ZodString>;
  } & {
    [K in `${N}_cents`]: OptionalNullable<z.ZodNumber>;
  };
}
type OptionalNullable<T extends z.ZodType> = z.ZodOptional<z.ZodNullable<T>>;

export const nullableString = z.string().nullable().optional();
export const nullableInt = z.number().int().nullable().optional();
export const nullableBool = z.boolean().nullable().optional();
