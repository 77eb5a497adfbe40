import { z } from 'zod';
import { itemSchema, moneyFields, nullableInt, nullableString } from './envelope.js';
import { amountSchema, idSchema } from './formats.js';

export const addOnCategorySchema = itemSchema(
  z.looseObject({
    id: z.number().int(),
    name: nullableString,
    /** New categories go to the end. */
    position: nullableInt,
  }),
);
export type AddOnCategory = z.infer<typeof addOnCategorySchema>;

const image = z.looseObject({
  video_variant: z.unknown().optional(),
  url: nullableString,
  content_type: nullableString,
});

export const addOnAttributesSchema = z.looseObject({
  id: z.number().int(),
  name: nullableString,
  description: nullableString,
  position: nullableInt,
  /** Value seen: flat_rate; others are kept as strings. */
  price_method: nullableString,
  third_party_video_id: nullableString,
  ...moneyFields('price'),
  ...moneyFields('hourly_price'),
  ...moneyFields('daily_price'),
  primary_image: image.nullable().optional(),
  additional_images: z.array(z.unknown()).nullable().optional(),
});
export type AddOnAttributes = z.infer<typeof addOnAttributesSchema>;
export const addOnSchema = itemSchema(addOnAttributesSchema);
export type AddOn = z.infer<typeof addOnSchema>;

export const addOnCategoryIncludeQuerySchema = z.strictObject({
  include: z.enum(['add_ons']).optional(),
});
export type AddOnCategoryIncludeQuery = z.input<typeof addOnCategoryIncludeQuerySchema>;

export const addOnCategoryBodySchema = z.strictObject({ name: z.string().min(1) });
export type AddOnCategoryBody = z.input<typeof addOnCategoryBodySchema>;

/** The add-on list query as the caller writes it; the client sends category_ids as category_ids[]. */
export const addOnListQuerySchema = z.strictObject({
  text: z.string().optional(),
  only_widget_visible: z.boolean().optional(),
  order: z.string().min(1).optional(),
  category_ids: z.array(idSchema).optional(),
});
export type AddOnListQuery = z.input<typeof addOnListQuerySchema>;

/**
 * POST /api/v1/add_ons. Without price_method the service makes a flat rate of 0. Methods other
 * than flat_rate are not shown in the spec, so any method name is passed on.
 */
export const createAddOnBodySchema = z.strictObject({
  add_on_category_id: idSchema,
  name: z.string().min(1),
  /** Required, and blank counts as missing (the service's presence rule). */
  description: z.string().min(1),
  price_method: z.string().min(1).optional(),
  price: amountSchema.optional(),
  hourly_price: amountSchema.optional(),
  daily_price: amountSchema.optional(),
});
export type CreateAddOnBody = z.input<typeof createAddOnBodySchema>;
