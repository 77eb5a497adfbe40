import type { StoredRecord } from '../db.js';
import type { Handlers, SandboxContext } from '../context.js';
import {
  item,
  listBody,
  money,
  ok,
  paging,
  parseInclude,
  listPage,
  refList,
  refOne,
  sideload,
  single,
  type Item,
} from '../envelope.js';
import { AMOUNT, numberField, type NumberRule } from '../body-fields.js';
import { badRequest, FieldErrors, notFound } from '../errors.js';
import { queryParam } from '../query-params.js';

/**
 * Add-on categories and add-ons.
 *
 * Record types (read by other modules through ctx.records):
 * - 'add_on_category': { id, name, position }
 * - 'add_on' (parentId = its category): { id, name, description, position, add_on_category_id,
 *   price_method ('flat_rate' | 'hourly' | 'daily'), price_cents, hourly_price_cents,
 *   daily_price_cents, third_party_video_id (string | null), widget_visible (boolean),
 *   quantity_available (number | null: how many can be out at once; null = not limited) }
 *
 * Deleting a category soft-deletes it and its add-ons; bookings keep their own copies of what
 * they hold (event_add_on records), so they are unaffected.
 */
export interface AddOnCategoryAttrs extends Record<string, unknown> {
  id: number;
  name: string;
  position: number;
}

export const ADD_ON_PRICE_METHODS = ['flat_rate', 'hourly', 'daily'] as const;
export type AddOnPriceMethod = (typeof ADD_ON_PRICE_METHODS)[number];

export interface AddOnAttrs extends Record<string, unknown> {
  id: number;
  name: string;
  description: string;
  position: number;
  add_on_category_id: number;
  price_method: AddOnPriceMethod;
  price_cents: number;
  hourly_price_cents: number;
  daily_price_cents: number;
  third_party_video_id: string | null;
  widget_visible: boolean;
  quantity_available: number | null;
}

/** The price field each price method reads from the body. */
const PRICE_FIELD: Record<AddOnPriceMethod, 'price' | 'hourly_price' | 'daily_price'> = {
  flat_rate: 'price',
  hourly: 'hourly_price',
  daily: 'daily_price',
};

export function businessCurrency(ctx: SandboxContext, businessId: number): string {
  const row = ctx.db.prepare('SELECT currency FROM businesses WHERE id = ?').get(businessId) as
    { currency: string } | undefined;
  return row?.currency ?? 'USD';
}

export function getAddOn(
  ctx: SandboxContext,
  businessId: number,
  id: number,
): StoredRecord<AddOnAttrs> | undefined {
  return ctx.records.get<AddOnAttrs>('add_on', businessId, id);
}

export function addOnItem(r: StoredRecord<AddOnAttrs>, currency = 'USD'): Item {
  const a = r.attrs;
  return item(
    'add_on',
    {
      id: a.id,
      name: a.name,
      description: a.description,
      position: a.position,
      price_method: a.price_method,
      third_party_video_id: a.third_party_video_id,
      ...money('price', a.price_cents, currency),
      ...money('hourly_price', a.hourly_price_cents, currency),
      ...money('daily_price', a.daily_price_cents, currency),
      primary_image: {
        url: `/images/add_ons/${a.id}.jpg`,
        content_type: 'image/jpeg',
        video_variant: `/images/add_ons/${a.id}/video_variant.jpg`,
      },
      additional_images: [],
    },
    { add_on_category: refOne('add_on_category', a.add_on_category_id) },
  );
}

function categoryAddOns(ctx: SandboxContext, categoryId: number): StoredRecord<AddOnAttrs>[] {
  return ctx.records
    .children<AddOnAttrs>('add_on', categoryId)
    .sort((a, b) => a.attrs.position - b.attrs.position || a.id - b.id);
}

function categoryItem(
  ctx: SandboxContext,
  r: StoredRecord<AddOnCategoryAttrs>,
  withAddOns: boolean,
): Item {
  const attributes = { id: r.attrs.id, name: r.attrs.name, position: r.attrs.position };
  if (!withAddOns) return item('add_on_category', attributes);
  const ids = categoryAddOns(ctx, r.id).map((a) => a.id);
  return item('add_on_category', attributes, { add_ons: refList('add_on', ids) });
}

type CategoryInclude = 'add_ons';
const NO_INCLUDE: ReadonlySet<CategoryInclude> = new Set();

/** `include` as a comma list (or repeated); only add_ons exists. */
function categoryIncludes(query: Record<string, unknown>): ReadonlySet<CategoryInclude> {
  return parseInclude<CategoryInclude>(query.include, ['add_ons']);
}

function categoryBody(
  ctx: SandboxContext,
  r: StoredRecord<AddOnCategoryAttrs>,
  include: ReadonlySet<CategoryInclude>,
) {
  const currency = businessCurrency(ctx, r.businessId);
  return single(
    categoryItem(ctx, r, include.has('add_ons')),
    sideload(include, () => categoryAddOns(ctx, r.id).map((a) => addOnItem(a, currency))),
  );
}

function requireName(body: Record<string, unknown>, errors: FieldErrors): string | undefined {
  const name = body.name;
  if (name === undefined || name === null || (typeof name === 'string' && name.trim() === '')) {
    errors.add('name', "can't be blank");
    return undefined;
  }
  if (typeof name !== 'string') {
    errors.add('name', 'must be a string');
    return undefined;
  }
  return name.trim();
}

function nextPosition(ctx: SandboxContext, sql: string, ...params: unknown[]): number {
  const row = ctx.db.prepare(sql).get(...params) as { p: number | null } | undefined;
  return (row?.p ?? 0) + 1;
}

export function createAddOnCategory(
  ctx: SandboxContext,
  businessId: number,
  input: { name: string },
): StoredRecord<AddOnCategoryAttrs> {
  const errors = new FieldErrors();
  const name = requireName(input, errors);
  errors.throwIfAny();
  const position = nextPosition(
    ctx,
    `SELECT max(json_extract(attrs, '$.position')) AS p FROM records
     WHERE type = 'add_on_category' AND business_id = ? AND deleted_at IS NULL`,
    businessId,
  );
  return ctx.records.insert<AddOnCategoryAttrs>('add_on_category', businessId, (id) => ({
    id,
    name: name ?? '',
    position,
  }));
}

/** A number sent as a JSON number or as text, as Rails would cast it. */
/** A number as JSON or as text (these forms are read as Rails casts them); blank is unset. */
function textNumber(
  body: Record<string, unknown>,
  field: string,
  errors: FieldErrors,
  rule: NumberRule,
): number | undefined {
  return numberField(body, field, errors, { ...rule, text: true }) ?? undefined;
}

function integerField(
  body: Record<string, unknown>,
  field: string,
  errors: FieldErrors,
): number | undefined {
  return textNumber(body, field, errors, { integer: true });
}

/** A price as a number or a decimal string ("12.50") → cents. */
function priceCents(
  body: Record<string, unknown>,
  field: string,
  errors: FieldErrors,
): number | undefined {
  const value = textNumber(body, field, errors, AMOUNT);
  return value === undefined ? undefined : Math.round(value * 100);
}

function booleanField(
  body: Record<string, unknown>,
  field: string,
  errors: FieldErrors,
): boolean | undefined {
  const raw = body[field];
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (raw === true || raw === 'true' || raw === 1 || raw === '1') return true;
  if (raw === false || raw === 'false' || raw === 0 || raw === '0') return false;
  errors.add(field, 'must be true or false');
  return undefined;
}

export interface AddOnInput {
  add_on_category_id: unknown;
  name: unknown;
  description: unknown;
  price_method?: unknown;
  price?: unknown;
  hourly_price?: unknown;
  daily_price?: unknown;
  third_party_video_id?: unknown;
  widget_visible?: unknown;
  quantity_available?: unknown;
}

/** Validates like the POST and appends the add-on to the end of its category. */
export function createAddOn(
  ctx: SandboxContext,
  businessId: number,
  input: AddOnInput | Record<string, unknown>,
): StoredRecord<AddOnAttrs> {
  const body = input as Record<string, unknown>;
  const errors = new FieldErrors();
  const categoryId = integerField(body, 'add_on_category_id', errors);
  const rawCategory = body.add_on_category_id;
  if (rawCategory === undefined || rawCategory === null || rawCategory === '') {
    errors.add('add_on_category_id', "can't be blank");
  } else if (
    categoryId !== undefined &&
    !ctx.records.get('add_on_category', businessId, categoryId)
  ) {
    errors.add('add_on_category_id', 'must exist');
  }
  const name = requireName(body, errors);
  const description = body.description;
  if (
    description === undefined ||
    description === null ||
    (typeof description === 'string' && description.trim() === '')
  ) {
    errors.add('description', "can't be blank");
  } else if (typeof description !== 'string') {
    errors.add('description', 'must be a string');
  }
  let method: AddOnPriceMethod = 'flat_rate';
  const rawMethod = body.price_method;
  if (rawMethod !== undefined && rawMethod !== null && rawMethod !== '') {
    if (
      typeof rawMethod === 'string' &&
      (ADD_ON_PRICE_METHODS as readonly string[]).includes(rawMethod)
    ) {
      method = rawMethod as AddOnPriceMethod;
    } else {
      errors.add(
        'price_method',
        `is not included in the list (${ADD_ON_PRICE_METHODS.join(', ')})`,
      );
    }
  }
  const prices = {
    price: priceCents(body, 'price', errors),
    hourly_price: priceCents(body, 'hourly_price', errors),
    daily_price: priceCents(body, 'daily_price', errors),
  };
  const video = body.third_party_video_id;
  if (video !== undefined && video !== null && typeof video !== 'string') {
    errors.add('third_party_video_id', 'must be a string');
  }
  const widgetVisible = booleanField(body, 'widget_visible', errors);
  const quantity = integerField(body, 'quantity_available', errors);
  if (quantity !== undefined && quantity < 1) {
    errors.add('quantity_available', 'must be greater than 0');
  }
  errors.throwIfAny();

  // Only the price field matching the method counts; the others stay 0.
  const chosen = prices[PRICE_FIELD[method]] ?? 0;
  const parentId = categoryId ?? 0;
  const position = nextPosition(
    ctx,
    `SELECT max(json_extract(attrs, '$.position')) AS p FROM records
     WHERE type = 'add_on' AND parent_id = ? AND deleted_at IS NULL`,
    parentId,
  );
  return ctx.records.insert<AddOnAttrs>(
    'add_on',
    businessId,
    (id) => ({
      id,
      name: name ?? '',
      description: (description as string).trim(),
      position,
      add_on_category_id: parentId,
      price_method: method,
      price_cents: method === 'flat_rate' ? chosen : 0,
      hourly_price_cents: method === 'hourly' ? chosen : 0,
      daily_price_cents: method === 'daily' ? chosen : 0,
      third_party_video_id: typeof video === 'string' ? video : null,
      widget_visible: widgetVisible ?? true,
      quantity_available: quantity ?? null,
    }),
    { parentId },
  );
}

function findCategory(
  ctx: SandboxContext,
  businessId: number,
  id: string | undefined,
): StoredRecord<AddOnCategoryAttrs> {
  const record = ctx.records.get<AddOnCategoryAttrs>('add_on_category', businessId, Number(id));
  if (!record) throw notFound('Add-on category', id ?? '');
  return record;
}

function asObject(body: unknown): Record<string, unknown> {
  return body as Record<string, unknown>;
}

const ADD_ON_ORDERS: Record<string, string> = {
  position:
    "(SELECT json_extract(c.attrs, '$.position') FROM records c WHERE c.type = 'add_on_category' AND c.id = records.parent_id), json_extract(attrs, '$.position'), id",
  name: "lower(json_extract(attrs, '$.name')), id",
  price: "json_extract(attrs, '$.price_cents'), id",
};

/** category_ids[] (or category_ids), repeated or comma separated, as positive integers. */
function categoryIds(query: Record<string, unknown>): number[] | undefined {
  const raw = query['category_ids[]'] ?? query.category_ids;
  if (raw === undefined) return undefined;
  const values: unknown[] = Array.isArray(raw) ? (raw as unknown[]) : [raw];
  const parts = values.flatMap((v) => (typeof v === 'string' ? v.split(',') : [v]));
  const ids: number[] = [];
  for (const part of parts) {
    if (typeof part !== 'string' || !/^\d{1,15}$/.test(part.trim())) {
      if (part === '') continue;
      throw badRequest(
        'invalid_parameter',
        `category_ids[] must be integers, got '${(typeof part === 'string' ? part : JSON.stringify(part)).slice(0, 40)}'`,
      );
    }
    ids.push(Number(part.trim()));
  }
  return ids;
}

export function addOnsHandlers(): Handlers {
  return {
    'addOnCategories.list': ({ ctx, caller, query }) => {
      const include = categoryIncludes(query);
      const p = paging(query, ctx.limits);
      const { records, total } = listPage<AddOnCategoryAttrs>(
        ctx,
        p,
        'add_on_category',
        caller.businessId,
        { orderBy: "json_extract(attrs, '$.position'), id" },
      );
      const currency = businessCurrency(ctx, caller.businessId);
      return listBody(
        records.map((r) => categoryItem(ctx, r, include.has('add_ons'))),
        total,
        p,
        sideload(include, () =>
          records.flatMap((r) => categoryAddOns(ctx, r.id).map((a) => addOnItem(a, currency))),
        ),
      );
    },

    'addOnCategories.create': ({ ctx, caller, body }) =>
      categoryBody(
        ctx,
        createAddOnCategory(ctx, caller.businessId, asObject(body) as { name: string }),
        NO_INCLUDE,
      ),

    'addOnCategories.get': ({ ctx, caller, params, query }) => {
      const include = categoryIncludes(query);
      return categoryBody(ctx, findCategory(ctx, caller.businessId, params.id), include);
    },

    'addOnCategories.update': ({ ctx, caller, params, body }) => {
      const record = findCategory(ctx, caller.businessId, params.id);
      const input = asObject(body);
      // name is the only editable field; anything else sent is ignored, as Rails strong
      // parameters would.
      if (!('name' in input)) return categoryBody(ctx, record, NO_INCLUDE);
      const errors = new FieldErrors();
      const name = requireName(input, errors);
      errors.throwIfAny();
      return categoryBody(
        ctx,
        ctx.records.update(record, { name: name ?? record.attrs.name }),
        NO_INCLUDE,
      );
    },

    'addOnCategories.delete': ({ ctx, caller, params }) => {
      const record = findCategory(ctx, caller.businessId, params.id);
      for (const addOn of ctx.records.children('add_on', record.id))
        ctx.records.softDelete(addOn, ctx.clock.iso());
      ctx.records.softDelete(record, ctx.clock.iso());
      return ok();
    },

    'addOns.list': ({ ctx, caller, query }) => {
      const conditions: string[] = [];
      const params: unknown[] = [];
      const text = queryParam(query, 'text');
      if (text !== undefined) {
        conditions.push("instr(lower(json_extract(attrs, '$.name')), lower(?)) > 0");
        params.push(text.trim());
      }
      const widget = queryParam(query, 'only_widget_visible');
      if (widget !== undefined) {
        if (!['true', 'false', '1', '0'].includes(widget)) {
          throw badRequest(
            'invalid_parameter',
            `only_widget_visible must be true or false, got '${widget.slice(0, 40)}'`,
          );
        }
        if (widget === 'true' || widget === '1') {
          conditions.push("json_extract(attrs, '$.widget_visible') = 1");
        }
      }
      const order = queryParam(query, 'order') ?? 'position';
      const orderBy = ADD_ON_ORDERS[order];
      if (!orderBy) {
        throw badRequest(
          'invalid_parameter',
          `order must be one of ${Object.keys(ADD_ON_ORDERS).join(', ')}, got '${order.slice(0, 40)}'`,
        );
      }
      const ids = categoryIds(query);
      if (ids !== undefined && ids.length > 0) {
        conditions.push(`parent_id IN (${ids.map(() => '?').join(', ')})`);
        params.push(...ids);
      }
      const p = paging(query, ctx.limits);
      const { records, total } = listPage<AddOnAttrs>(ctx, p, 'add_on', caller.businessId, {
        ...(conditions.length > 0 ? { where: conditions.join(' AND '), params } : {}),
        orderBy,
      });
      const currency = businessCurrency(ctx, caller.businessId);
      return listBody(
        records.map((r) => addOnItem(r, currency)),
        total,
        p,
      );
    },

    'addOns.create': ({ ctx, caller, body }) => {
      const record = createAddOn(ctx, caller.businessId, asObject(body));
      return single(addOnItem(record, businessCurrency(ctx, caller.businessId)));
    },
  };
}
