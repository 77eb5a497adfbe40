import type { Transport } from '../transport.js';
import { listSchema, okSchema, singleSchema } from '../schemas/envelope.js';
import {
  createDesignTemplateBodySchema,
  designCategoryLayoutSchema,
  designTemplateCategorySchema,
  designTemplateListQuerySchema,
  designTemplateSchema,
  layoutsQuerySchema,
  templateSelectionBodySchema,
  updateDesignTemplateBodySchema,
  type CreateDesignTemplateBody,
  type DesignTemplateListQuery,
  type LayoutsQuery,
  type TemplateSelection,
  type UpdateDesignTemplateBody,
} from '../schemas/design-templates.js';

const templateSingle = singleSchema(designTemplateSchema);
/** Checked in the caller's form; include goes out as a comma list. */
const listQuerySchema = designTemplateListQuerySchema.transform(({ include, ...rest }) =>
  include && include.length > 0 ? { ...rest, include: include.join(',') } : rest,
);

/** Design templates with categories, tags and layouts (create and update: installed apps only). */
export function designTemplatesResource(t: Transport) {
  return {
    /** `include` sideloads the named relations into `included`. */
    list: (query: DesignTemplateListQuery = {}) =>
      t.call('designTemplates.list', {
        query,
        querySchema: listQuerySchema,
        responseSchema: listSchema(designTemplateSchema),
      }),
    create: (body: CreateDesignTemplateBody) =>
      t.call('designTemplates.create', {
        body,
        bodySchema: createDesignTemplateBodySchema,
        responseSchema: templateSingle,
      }),
    /** The same fields as create except the category, all optional. */
    update: (id: number, body: UpdateDesignTemplateBody) =>
      t.call('designTemplates.update', {
        params: { id },
        body,
        bodySchema: updateDesignTemplateBodySchema,
        responseSchema: templateSingle,
      }),
    categories: () =>
      t.call('designTemplates.categories', {
        responseSchema: listSchema(designTemplateCategorySchema),
      }),
    layouts: (query: LayoutsQuery = {}) =>
      t.call('designTemplates.layouts', {
        query,
        querySchema: layoutsQuerySchema,
        responseSchema: listSchema(designCategoryLayoutSchema),
      }),
  };
}

/** Records a customer's template choice; nothing is returned but the ok envelope. */
export function templateSelectionsResource(t: Transport) {
  return {
    create: (selection: TemplateSelection) =>
      t.call('templateSelections.create', {
        body: { template_selection: selection },
        bodySchema: templateSelectionBodySchema,
        responseSchema: okSchema,
      }),
  };
}
