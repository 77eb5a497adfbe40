import { z } from 'zod';
import { itemSchema, moneyFields, nullableBool, nullableInt, nullableString } from './envelope.js';
import { idSchema, pagingQueryFields } from './formats.js';

/**
 * Services > package groups > packages (event categories > ... > event types). The spec shows
 * none of their fields: these are read loosely, naming only what the rest of ebsync uses.
 */
export const serviceSchema = itemSchema(
  z.looseObject({ id: z.number().int(), name: nullableString, position: nullableInt }),
);
export type Service = z.infer<typeof serviceSchema>;

export const packageGroupSchema = itemSchema(
  z.looseObject({
    id: z.number().int(),
    name: nullableString,
    service_id: nullableInt,
    service_name: nullableString,
    position: nullableInt,
  }),
);
export type PackageGroup = z.infer<typeof packageGroupSchema>;

export const packageSchema = itemSchema(
  z.looseObject({
    id: z.number().int(),
    name: nullableString,
    package_group_id: nullableInt,
    package_group_name: nullableString,
    service_id: nullableInt,
    service_name: nullableString,
    price_method: nullableString,
    ...moneyFields('price'),
    default_length_in_minutes: nullableInt,
    custom: nullableBool,
    position: nullableInt,
  }),
);
export type Package = z.infer<typeof packageSchema>;

export const servicesQuerySchema = z.strictObject({ ...pagingQueryFields });
export type ServicesQuery = z.input<typeof servicesQuerySchema>;
export const packageGroupsQuerySchema = z.strictObject({
  service_id: idSchema.optional(),
  ...pagingQueryFields,
});
export type PackageGroupsQuery = z.input<typeof packageGroupsQuerySchema>;
export const packagesQuerySchema = z.strictObject({
  package_group_id: idSchema.optional(),
  ...pagingQueryFields,
});
export type PackagesQuery = z.input<typeof packagesQuerySchema>;
