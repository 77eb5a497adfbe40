import {
  DESIGN_TEMPLATE_INCLUDES,
  type DesignTemplateInclude,
} from '../../api/schemas/design-templates.js';
import type { StoredRecord } from '../db.js';
import type { Caller } from '../auth.js';
import type { Handlers, SandboxContext } from '../context.js';
import {
  item,
  listBody,
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
import { FieldErrors, notFound, validationError } from '../errors.js';
import { businessNow } from '../time.js';
import { queryId } from '../query-params.js';
import { ID, numberField } from '../body-fields.js';

/**
 * Design templates installed apps publish into a business, their categories, tags and
 * layouts, and the template selections apps report when a customer picks one.
 *
 * Record types:
 * - 'design_template_category' { id, name, kind: 'DesignTemplate' }; every business gets
 *   DEFAULT_CATEGORY (with its default tags and layouts) on first use.
 * - 'design_category_tag' / 'design_category_layout' { id, name,
 *   design_template_category_id, position } (parent: the category).
 * - 'design_template' DesignTemplateAttrs (parent: the category).
 * - 'template_selection' TemplateSelectionAttrs: never returned by the API; for webhooks and
 *   the admin API.
 */
export interface CategoryAttrs extends Record<string, unknown> {
  id: number;
  name: string;
  kind: 'DesignTemplate';
}
export interface TagAttrs extends Record<string, unknown> {
  id: number;
  name: string;
  design_template_category_id: number;
  position: number;
}
export type LayoutAttrs = TagAttrs;

export interface DesignTemplateAttrs extends Record<string, unknown> {
  id: number;
  name: string;
  description: string | null;
  video_url: string | null;
  purchase_url: string | null;
  search_text: string | null;
  number_of_photos: number | null;
  design_template_category_id: number;
  design_category_tag_ids: number[];
  design_category_layout_ids: number[];
  primary_image_url: string;
  additional_image_urls: string[];
  /** The installed app that created it (undefined for seeded templates). */
  app_id: number | null;
  created_at: string;
}

export interface TemplateSelectionInput {
  event_booking_id: number;
  design_id: number;
  user_id: number;
  template_name: string;
  template_image_url: string;
  account_number: string | null;
  template_purchase_url: string | null;
  app_id: number | null;
}
export interface TemplateSelectionAttrs extends TemplateSelectionInput, Record<string, unknown> {
  id: number;
  created_at: string;
}

const TAG = 'design_category_tag';
const LAYOUT = 'design_category_layout';
type Grouping = typeof TAG | typeof LAYOUT;

export const DEFAULT_CATEGORY = {
  name: 'Photo Templates',
  tags: ['Wedding', 'Birthday', 'Corporate'],
  layouts: ['2x6 Strip', '4x6 Postcard', 'Square'],
};

function addGrouping(
  ctx: SandboxContext,
  businessId: number,
  type: Grouping,
  categoryId: number,
  name: string,
): StoredRecord<TagAttrs> {
  const position = ctx.records.list(type, businessId, { parentId: categoryId, limit: 0 }).total + 1;
  return ctx.records.insert<TagAttrs>(
    type,
    businessId,
    (id) => ({ id, name, design_template_category_id: categoryId, position }),
    { parentId: categoryId },
  );
}

export function createDesignCategory(
  ctx: SandboxContext,
  businessId: number,
  input: { name: string; tags?: readonly string[]; layouts?: readonly string[] },
): StoredRecord<CategoryAttrs> {
  const category = ctx.records.insert<CategoryAttrs>(
    'design_template_category',
    businessId,
    (id) => ({
      id,
      name: input.name,
      kind: 'DesignTemplate',
    }),
  );
  for (const name of input.tags ?? []) addGrouping(ctx, businessId, TAG, category.id, name);
  for (const name of input.layouts ?? []) addGrouping(ctx, businessId, LAYOUT, category.id, name);
  return category;
}

/** Creates the default category the first time a business touches design templates. */
export function ensureDesignDefaults(ctx: SandboxContext, businessId: number): void {
  const { total } = ctx.records.list('design_template_category', businessId, {
    includeDeleted: true,
    limit: 0,
  });
  if (total === 0) createDesignCategory(ctx, businessId, DEFAULT_CATEGORY);
}

export interface DesignTemplateInput {
  design_template_category_id: number;
  name: string;
  primary_image_url: string;
  description?: string | null;
  video_url?: string | null;
  purchase_url?: string | null;
  search_text?: string | null;
  number_of_photos?: number | null;
  design_category_tag_ids?: number[];
  design_category_layout_ids?: number[];
  additional_image_urls?: string[];
  app_id?: number | null;
}

export function createDesignTemplate(
  ctx: SandboxContext,
  businessId: number,
  input: DesignTemplateInput,
): StoredRecord<DesignTemplateAttrs> {
  return ctx.records.insert<DesignTemplateAttrs>(
    'design_template',
    businessId,
    (id) => ({
      id,
      name: input.name,
      description: input.description ?? null,
      video_url: input.video_url ?? null,
      purchase_url: input.purchase_url ?? null,
      search_text: input.search_text ?? null,
      number_of_photos: input.number_of_photos ?? null,
      design_template_category_id: input.design_template_category_id,
      design_category_tag_ids: input.design_category_tag_ids ?? [],
      design_category_layout_ids: input.design_category_layout_ids ?? [],
      primary_image_url: input.primary_image_url,
      additional_image_urls: input.additional_image_urls ?? [],
      app_id: input.app_id ?? null,
      created_at: businessNow(ctx, businessId),
    }),
    { parentId: input.design_template_category_id },
  );
}

// ---- presentation -------------------------------------------------------------------------

function contentType(url: string): string {
  const ext = /\.(\w+)(?:[?#].*)?$/.exec(url)?.[1]?.toLowerCase();
  const types: Record<string, string> = {
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    png: 'image/png',
    gif: 'image/gif',
    webp: 'image/webp',
    mp4: 'video/mp4',
  };
  return (ext && types[ext]) ?? 'image/jpeg';
}

/** An attachment as the service shows it: the original plus a video-sized variant. */
function image(url: string) {
  const variant = `${url}${url.includes('?') ? '&' : '?'}variant=video`;
  return { url, content_type: contentType(url), video_variant: variant };
}

function groupingNames(
  ctx: SandboxContext,
  businessId: number,
  type: Grouping,
  ids: readonly number[],
): string[] {
  return ids.map((id) => ctx.records.get<TagAttrs>(type, businessId, id)?.attrs.name ?? '');
}

export function designTemplateItem(
  ctx: SandboxContext,
  r: StoredRecord<DesignTemplateAttrs>,
): Item {
  const { primary_image_url, additional_image_urls, ...a } = r.attrs;
  const shown: Record<string, unknown> = { ...a };
  delete shown.app_id;
  return item(
    'design_template',
    {
      ...shown,
      id: a.id,
      design_category_tag_names: groupingNames(ctx, r.businessId, TAG, a.design_category_tag_ids),
      design_category_layout_names: groupingNames(
        ctx,
        r.businessId,
        LAYOUT,
        a.design_category_layout_ids,
      ),
      primary_image: image(primary_image_url),
      additional_images: additional_image_urls.map(image),
    },
    {
      design_template_category: refOne('design_template_category', a.design_template_category_id),
      design_category_tags: refList(TAG, a.design_category_tag_ids),
      design_category_layouts: refList(LAYOUT, a.design_category_layout_ids),
    },
  );
}

const categoryItem = (r: StoredRecord<CategoryAttrs>): Item =>
  item('design_template_category', r.attrs);
const groupingItem =
  (type: Grouping) =>
  (r: StoredRecord<TagAttrs>): Item =>
    item(type, r.attrs);

function sideloads(
  ctx: SandboxContext,
  businessId: number,
  templates: readonly StoredRecord<DesignTemplateAttrs>[],
  includes: ReadonlySet<DesignTemplateInclude>,
): Item[] {
  const out: Item[] = [];
  const seen = new Set<string>();
  const push = (type: string, id: number, build: () => Item | undefined) => {
    const key = `${type}:${id}`;
    if (seen.has(key)) return;
    seen.add(key);
    const built = build();
    if (built) out.push(built);
  };
  for (const t of templates) {
    const a = t.attrs;
    if (includes.has('design_template_category')) {
      push('design_template_category', a.design_template_category_id, () => {
        const c = ctx.records.get<CategoryAttrs>(
          'design_template_category',
          businessId,
          a.design_template_category_id,
        );
        return c && categoryItem(c);
      });
    }
    for (const [name, type, ids] of [
      ['design_category_tags', TAG, a.design_category_tag_ids],
      ['design_category_layouts', LAYOUT, a.design_category_layout_ids],
    ] as const) {
      if (!includes.has(name)) continue;
      for (const id of ids) {
        push(type, id, () => {
          const g = ctx.records.get<TagAttrs>(type, businessId, id);
          return g && groupingItem(type)(g);
        });
      }
    }
  }
  return out;
}

// ---- input --------------------------------------------------------------------------------

type Body = Record<string, unknown>;

const isUrl = (v: string): boolean => {
  try {
    const u = new URL(v);
    return u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    return false;
  }
};

interface TemplateFields {
  name?: string;
  primary_image_url?: string;
  description?: string | null;
  video_url?: string | null;
  purchase_url?: string | null;
  search_text?: string | null;
  number_of_photos?: number | null;
  additional_image_urls?: string[];
  tagIds?: number[];
  tagNames?: string[];
  layoutIds?: number[];
  layoutNames?: string[];
}

function readFields(body: Body, errors: FieldErrors, creating: boolean): TemplateFields {
  const out: TemplateFields = {};
  for (const name of ['name', 'primary_image_url'] as const) {
    const v = body[name];
    if (v === undefined && !creating) continue;
    if (v === undefined || v === null || (typeof v === 'string' && v.trim() === ''))
      errors.add(name, "can't be blank");
    else if (typeof v !== 'string') errors.add(name, 'must be a string');
    else if (name === 'primary_image_url' && !isUrl(v.trim()))
      errors.add(name, 'is not a valid URL');
    else out[name] = v.trim();
  }
  for (const name of ['description', 'video_url', 'purchase_url', 'search_text'] as const) {
    const v = body[name];
    if (v === undefined) continue;
    if (v === null || v === '') out[name] = null;
    else if (typeof v !== 'string') errors.add(name, 'must be a string');
    else if ((name === 'purchase_url' || name === 'video_url') && !isUrl(v.trim()))
      errors.add(name, 'is not a valid URL');
    else out[name] = v.trim();
  }
  const photos = numberField(body, 'number_of_photos', errors, { integer: true, min: 0 });
  if (photos !== undefined) out.number_of_photos = photos;
  const images = body.additional_image_urls;
  if (images !== undefined) {
    if (!Array.isArray(images) || !images.every((u) => typeof u === 'string' && isUrl(u)))
      errors.add('additional_image_urls', 'must be an array of URLs');
    else out.additional_image_urls = images as string[];
  }
  const ids = (name: string): number[] | undefined => {
    const v = body[name];
    if (v === undefined) return undefined;
    if (v === null) return [];
    if (
      !Array.isArray(v) ||
      !v.every((x) => typeof x === 'number' && Number.isInteger(x) && x > 0)
    ) {
      errors.add(name, 'must be an array of integers');
      return undefined;
    }
    return [...new Set(v as number[])];
  };
  const names = (name: string): string[] | undefined => {
    const v = body[name];
    if (v === undefined) return undefined;
    if (v === null) return [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
      errors.add(name, 'must be an array of strings');
      return undefined;
    }
    return v.map((s: string) => s.trim()).filter(Boolean);
  };
  const set = <K extends keyof TemplateFields>(key: K, value: TemplateFields[K] | undefined) => {
    if (value !== undefined) out[key] = value;
  };
  set('tagIds', ids('design_category_tag_ids'));
  set('tagNames', names('design_category_tag_names'));
  set('layoutIds', ids('design_category_layout_ids'));
  set('layoutNames', names('design_category_layout_names'));
  return out;
}

/**
 * Resolves ids (which must belong to the category) and names (found case-insensitively or
 * created; repeats collapse to one) into one id list. Creation waits for `commit` so a
 * request that fails validation leaves nothing behind.
 */
function resolveGrouping(
  ctx: SandboxContext,
  businessId: number,
  type: Grouping,
  categoryId: number,
  field: string,
  ids: readonly number[] | undefined,
  names: readonly string[] | undefined,
  errors: FieldErrors,
): (() => number[]) | undefined {
  if (ids === undefined && names === undefined) return undefined;
  const existing = ctx.records.list<TagAttrs>(type, businessId, { parentId: categoryId }).records;
  const unknown = (ids ?? []).filter((id) => !existing.some((g) => g.id === id));
  if (unknown.length > 0) {
    errors.add(field, `contains ids that are not in category ${categoryId}: ${unknown.join(', ')}`);
  }
  return () => {
    const result = [...(ids ?? [])];
    const created = new Map<string, number>();
    for (const name of names ?? []) {
      const key = name.toLowerCase();
      const found =
        existing.find((g) => g.attrs.name.toLowerCase() === key)?.id ?? created.get(key);
      const id = found ?? addGrouping(ctx, businessId, type, categoryId, name).id;
      created.set(key, id);
      if (!result.includes(id)) result.push(id);
    }
    return result;
  };
}

function saveTemplate(
  ctx: SandboxContext,
  caller: Caller,
  body: Body,
  existing: StoredRecord<DesignTemplateAttrs> | undefined,
): StoredRecord<DesignTemplateAttrs> {
  const errors = new FieldErrors();
  let categoryId: number | undefined = existing?.attrs.design_template_category_id;
  if (!existing) {
    const v = numberField(body, 'design_template_category_id', errors, { ...ID, required: true });
    if (typeof v === 'number') {
      if (ctx.records.get('design_template_category', caller.businessId, v)) categoryId = v;
      else errors.add('design_template_category_id', 'must exist');
    }
  }
  const f = readFields(body, errors, !existing);
  const tags =
    categoryId === undefined
      ? undefined
      : resolveGrouping(
          ctx,
          caller.businessId,
          TAG,
          categoryId,
          'design_category_tag_ids',
          f.tagIds,
          f.tagNames,
          errors,
        );
  const layouts =
    categoryId === undefined
      ? undefined
      : resolveGrouping(
          ctx,
          caller.businessId,
          LAYOUT,
          categoryId,
          'design_category_layout_ids',
          f.layoutIds,
          f.layoutNames,
          errors,
        );
  errors.throwIfAny();
  const plain: Partial<TemplateFields> = { ...f };
  for (const k of ['tagIds', 'tagNames', 'layoutIds', 'layoutNames'] as const) delete plain[k];
  const tagList = tags?.();
  const layoutList = layouts?.();
  if (!existing) {
    const input = {
      ...plain,
      design_template_category_id: categoryId!,
      design_category_tag_ids: tagList ?? [],
      design_category_layout_ids: layoutList ?? [],
      app_id: caller.appId ?? null,
    };
    // name and primary_image_url were required above, so they are present here.
    return createDesignTemplate(ctx, caller.businessId, input as DesignTemplateInput);
  }
  const patch: Partial<DesignTemplateAttrs> = { ...(plain as Partial<DesignTemplateAttrs>) };
  if (tagList) patch.design_category_tag_ids = tagList;
  if (layoutList) patch.design_category_layout_ids = layoutList;
  return ctx.records.update(existing, patch);
}

function readSelection(ctx: SandboxContext, caller: Caller, body: Body): TemplateSelectionInput {
  const raw = body.template_selection;
  if (raw === undefined || raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw validationError({ template_selection: ["Template selection can't be blank"] });
  }
  const s = raw as Body;
  const errors = new FieldErrors();
  const int = (name: string): number | undefined =>
    numberField(s, name, errors, { ...ID, required: true }) ?? undefined;
  const str = (name: string, required: boolean): string | null | undefined => {
    const v = s[name];
    if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) {
      if (required) errors.add(name, "can't be blank");
      return null;
    }
    if (typeof v === 'number' && name === 'account_number') return String(v);
    if (typeof v !== 'string') {
      errors.add(name, 'must be a string');
      return undefined;
    }
    return v.trim();
  };
  const eventBookingId = int('event_booking_id');
  const designId = int('design_id');
  const userId = int('user_id');
  const name = str('template_name', true);
  const imageUrl = str('template_image_url', true);
  const account = str('account_number', false);
  const purchase = str('template_purchase_url', false);
  if (
    eventBookingId !== undefined &&
    !ctx.records.get('event_booking', caller.businessId, eventBookingId)
  )
    errors.add('event_booking_id', 'must exist');
  if (
    userId !== undefined &&
    !ctx.db
      .prepare('SELECT 1 FROM users WHERE id = ? AND business_id = ?')
      .get(userId, caller.businessId)
  )
    errors.add('user_id', 'must exist');
  errors.throwIfAny();
  return {
    event_booking_id: eventBookingId!,
    design_id: designId!,
    user_id: userId!,
    template_name: name!,
    template_image_url: imageUrl!,
    account_number: account ?? null,
    template_purchase_url: purchase ?? null,
    app_id: caller.appId ?? null,
  };
}

export function createTemplateSelection(
  ctx: SandboxContext,
  businessId: number,
  input: TemplateSelectionInput,
): StoredRecord<TemplateSelectionAttrs> {
  return ctx.records.insert<TemplateSelectionAttrs>('template_selection', businessId, (id) => ({
    ...input,
    id,
    created_at: businessNow(ctx, businessId),
  }));
}

// ---- handlers -----------------------------------------------------------------------------

export function designTemplatesHandlers(): Handlers {
  return {
    'designTemplates.list': ({ ctx, caller, query }) => {
      ensureDesignDefaults(ctx, caller.businessId);
      const categoryId = queryId(query, 'design_template_category_id');
      const includes = parseInclude(query.include, DESIGN_TEMPLATE_INCLUDES);
      const p = paging(query, ctx.limits);
      const { records, total } = listPage<DesignTemplateAttrs>(
        ctx,
        p,
        'design_template',
        caller.businessId,
        {
          ...(categoryId !== undefined ? { parentId: categoryId } : {}),
        },
      );
      return listBody(
        records.map((r) => designTemplateItem(ctx, r)),
        total,
        p,
        sideload(includes, () => sideloads(ctx, caller.businessId, records, includes)),
      );
    },

    'designTemplates.create': ({ ctx, caller, body }) => {
      ensureDesignDefaults(ctx, caller.businessId);
      return single(designTemplateItem(ctx, saveTemplate(ctx, caller, body as Body, undefined)));
    },

    'designTemplates.update': ({ ctx, caller, params, body }) => {
      const existing = ctx.records.get<DesignTemplateAttrs>(
        'design_template',
        caller.businessId,
        Number(params.id),
      );
      if (!existing) throw notFound('Design template', params.id ?? '');
      return single(designTemplateItem(ctx, saveTemplate(ctx, caller, body as Body, existing)));
    },

    'designTemplates.categories': ({ ctx, caller, query }) => {
      ensureDesignDefaults(ctx, caller.businessId);
      const p = paging(query, ctx.limits);
      const { records, total } = listPage<CategoryAttrs>(
        ctx,
        p,
        'design_template_category',
        caller.businessId,
        {},
      );
      return listBody(records.map(categoryItem), total, p);
    },

    'designTemplates.layouts': ({ ctx, caller, query }) => {
      ensureDesignDefaults(ctx, caller.businessId);
      const categoryId = queryId(query, 'design_template_category_id');
      const p = paging(query, ctx.limits);
      const { records, total } = listPage<LayoutAttrs>(ctx, p, LAYOUT, caller.businessId, {
        ...(categoryId !== undefined ? { parentId: categoryId } : {}),
        orderBy:
          "json_extract(attrs, '$.design_template_category_id'), json_extract(attrs, '$.position'), id",
      });
      return listBody(records.map(groupingItem(LAYOUT)), total, p);
    },

    'templateSelections.create': ({ ctx, caller, body }) => {
      createTemplateSelection(ctx, caller.businessId, readSelection(ctx, caller, body as Body));
      return ok();
    },
  };
}
