import { z } from 'zod';
import { itemSchema, nullableInt, nullableString } from './envelope.js';
import { idSchema } from './formats.js';

const variantImage = z.looseObject({ video_variant: z.unknown().optional() });

export const designTemplateSchema = itemSchema(
  z.looseObject({
    id: z.number().int(),
    name: nullableString,
    description: nullableString,
    video_url: nullableString,
    purchase_url: nullableString,
    number_of_photos: nullableInt,
    design_category_tag_ids: z.array(z.number().int()).nullable().optional(),
    design_category_tag_names: z.array(z.string()).nullable().optional(),
    design_category_layout_ids: z.array(z.number().int()).nullable().optional(),
    design_category_layout_names: z.array(z.string()).nullable().optional(),
    primary_image: variantImage.nullable().optional(),
    additional_images: z.array(z.unknown()).nullable().optional(),
  }),
);
export type DesignTemplate = z.infer<typeof designTemplateSchema>;

export const designTemplateCategorySchema = itemSchema(
  z.looseObject({
    id: z.number().int(),
    name: nullableString,
    /** Value seen: DesignTemplate. */
    kind: nullableString,
  }),
);
export type DesignTemplateCategory = z.infer<typeof designTemplateCategorySchema>;

const categoryChild = z.looseObject({
  id: z.number().int(),
  name: nullableString,
  design_template_category_id: nullableInt,
  position: nullableInt,
});
export const designCategoryTagSchema = itemSchema(categoryChild);
export type DesignCategoryTag = z.infer<typeof designCategoryTagSchema>;
export const designCategoryLayoutSchema = itemSchema(categoryChild);
export type DesignCategoryLayout = z.infer<typeof designCategoryLayoutSchema>;

export const DESIGN_TEMPLATE_INCLUDES = [
  'design_template_category',
  'design_category_tags',
  'design_category_layouts',
] as const;
export type DesignTemplateInclude = (typeof DESIGN_TEMPLATE_INCLUDES)[number];

/** The list query as the caller writes it; include is sent as a comma list. */
export const designTemplateListQuerySchema = z.strictObject({
  design_template_category_id: idSchema.optional(),
  include: z.array(z.enum(DESIGN_TEMPLATE_INCLUDES)).optional(),
});
export type DesignTemplateListQuery = z.input<typeof designTemplateListQuerySchema>;

export const layoutsQuerySchema = z.strictObject({
  design_template_category_id: idSchema.optional(),
});
export type LayoutsQuery = z.input<typeof layoutsQuerySchema>;

const templateFields = {
  name: z.string().min(1),
  description: z.string().optional(),
  purchase_url: z.url().optional(),
  number_of_photos: z.number().int().nonnegative().optional(),
  search_text: z.string().optional(),
  primary_image_url: z.url(),
  design_category_tag_ids: z.array(idSchema).optional(),
  /** A missing tag is created. */
  design_category_tag_names: z.array(z.string().min(1)).optional(),
  design_category_layout_ids: z.array(idSchema).optional(),
  /** A missing layout is created. */
  design_category_layout_names: z.array(z.string().min(1)).optional(),
};

export const createDesignTemplateBodySchema = z.strictObject({
  design_template_category_id: idSchema,
  ...templateFields,
});
export type CreateDesignTemplateBody = z.input<typeof createDesignTemplateBodySchema>;

/** Update: the same fields except the category, all optional. */
export const updateDesignTemplateBodySchema = z.strictObject(templateFields).partial();
export type UpdateDesignTemplateBody = z.input<typeof updateDesignTemplateBodySchema>;

export const templateSelectionSchema = z.strictObject({
  event_booking_id: idSchema,
  design_id: idSchema,
  user_id: idSchema,
  template_name: z.string().min(1),
  template_image_url: z.url(),
  /** The app's customer account number. */
  account_number: z.string().optional(),
  template_purchase_url: z.url().optional(),
});
export type TemplateSelection = z.input<typeof templateSelectionSchema>;
export const templateSelectionBodySchema = z.strictObject({
  template_selection: templateSelectionSchema,
});
export type TemplateSelectionBody = z.input<typeof templateSelectionBodySchema>;
