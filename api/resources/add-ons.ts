import type { Transport } from '../transport.js';
import { listSchema, okSchema, singleSchema } from '../schemas/envelope.js';
import {
  addOnCategoryBodySchema,
  addOnCategoryIncludeQuerySchema,
  addOnCategorySchema,
  addOnListQuerySchema,
  addOnSchema,
  createAddOnBodySchema,
  type AddOnCategoryBody,
  type AddOnCategoryIncludeQuery,
  type AddOnListQuery,
  type CreateAddOnBody,
} from '../schemas/add-ons.js';

const categorySingle = singleSchema(addOnCategorySchema);

/** Checked in the caller's form, sent in the wire form: arrays as `category_ids[]`, booleans as text. */
const addOnQuerySchema = addOnListQuerySchema.transform((q) => ({
  ...(q.text !== undefined ? { text: q.text } : {}),
  ...(q.only_widget_visible !== undefined
    ? { only_widget_visible: String(q.only_widget_visible) }
    : {}),
  ...(q.order !== undefined ? { order: q.order } : {}),
  ...(q.category_ids !== undefined ? { 'category_ids[]': q.category_ids } : {}),
}));

/** Add-on categories; deleting one removes its add-ons (bookings keep theirs). */
export function addOnCategoriesResource(t: Transport) {
  return {
    /** Active categories by position; `include: 'add_ons'` sideloads their add-ons. */
    list: (query: AddOnCategoryIncludeQuery = {}) =>
      t.call('addOnCategories.list', {
        query,
        querySchema: addOnCategoryIncludeQuerySchema,
        responseSchema: listSchema(addOnCategorySchema),
      }),
    /** New categories go to the end. */
    create: (body: AddOnCategoryBody) =>
      t.call('addOnCategories.create', {
        body,
        bodySchema: addOnCategoryBodySchema,
        responseSchema: categorySingle,
      }),
    get: (id: number, query: AddOnCategoryIncludeQuery = {}) =>
      t.call('addOnCategories.get', {
        params: { id },
        query,
        querySchema: addOnCategoryIncludeQuerySchema,
        responseSchema: categorySingle,
      }),
    /** The name is the only editable field. */
    update: (id: number, body: AddOnCategoryBody) =>
      t.call('addOnCategories.update', {
        params: { id },
        body,
        bodySchema: addOnCategoryBodySchema,
        responseSchema: categorySingle,
      }),
    delete: (id: number) =>
      t.call('addOnCategories.delete', { params: { id }, responseSchema: okSchema }),
  };
}

/** Add-ons (active only). */
export function addOnsResource(t: Transport) {
  return {
    list: (query: AddOnListQuery = {}) =>
      t.call('addOns.list', {
        query,
        querySchema: addOnQuerySchema,
        responseSchema: listSchema(addOnSchema),
      }),
    /** Without a price method: a flat rate of 0; appended to the end of its category. */
    create: (body: CreateAddOnBody) =>
      t.call('addOns.create', {
        body,
        bodySchema: createAddOnBodySchema,
        responseSchema: singleSchema(addOnSchema),
      }),
  };
}
