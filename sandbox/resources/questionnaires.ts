import { randomUUID } from 'node:crypto';
import type { StoredRecord } from '../db.js';
import type { Caller } from '../auth.js';
import type { Handlers, SandboxContext } from '../context.js';
import { item, listBody, ok, paging, listPage, refOne, single, type Item } from '../envelope.js';
import { FieldErrors, forbidden, notFound, validationError } from '../errors.js';
import {
  mergeAnswers,
  validateAnswers,
  type AnswerPatch,
  type AnswerValues,
  type QuestionnaireData,
  type QuestionnaireField,
  type SuggestedSong,
} from '../../api/schemas/questionnaire-answers.js';
import { businessNow } from '../time.js';
import { canSeeEvent, findVisibleEvent, getEvent } from './events-model.js';
import { queryId } from '../query-params.js';
import { ID, numberField } from '../body-fields.js';

/**
 * Questionnaires attached to bookings, the templates they are made from, and song
 * suggestion lists.
 *
 * Record types:
 * - 'questionnaire_template' TemplateAttrs: title, data.fieldGroups and the permission and
 *   visibility defaults copied to questionnaires. A business gets DEFAULT_TEMPLATES on first
 *   use; soft-deleted templates are never returned.
 * - 'questionnaire' QuestionnaireAttrs (parent: the event): kind standard (questions in
 *   data.fieldGroups, answers in values by field uuid) or external (external_url, provider;
 *   no questions, no answers, pdf_url null). Completion (markQuestionnaireComplete) locks it
 *   against customer edits and records the notifications the service sends.
 * - 'suggestion_list' SuggestionListAttrs { id, name, songs }: one default list per business,
 *   made on first use.
 * Reads 'event' records (another module's) for the booking date: attrs.starts_at.
 */
export type ShowBeforeOrAfter = 'before' | 'after' | null;

export interface PermissionSettings {
  allow_staff_view: boolean;
  allow_customer_view: boolean;
  allow_staff_edit: boolean;
  allow_customer_edit: boolean;
  show_before_or_after: ShowBeforeOrAfter;
}

export interface TemplateAttrs extends PermissionSettings, Record<string, unknown> {
  id: number;
  title: string;
  description: string | null;
  data: QuestionnaireData;
  created_at: string;
}

export interface QuestionnaireNotification {
  kind: 'automated_message' | 'staff_push';
  name: string;
  sent_at: string;
}

export interface QuestionnaireAttrs extends PermissionSettings, Record<string, unknown> {
  id: number;
  event_id: number;
  questionnaire_template_id: number | null;
  kind: 'standard' | 'external';
  title: string;
  data: QuestionnaireData;
  values: AnswerValues;
  external_url: string | null;
  provider: string | null;
  completed: boolean;
  completed_at: string | null;
  /** Set on completion: customers may no longer change answers. */
  locked_for_customers: boolean;
  notifications_sent: QuestionnaireNotification[];
  created_at: string;
}

export interface SuggestionSong extends SuggestedSong {
  songName: string;
  songArtistName: string;
  songAlbumName: string | null;
  songId: string;
  songProvider: string;
  songDurationSeconds: number | null;
}

export interface SuggestionListAttrs extends Record<string, unknown> {
  id: number;
  name: string;
  songs: SuggestionSong[];
}

// ---- defaults -----------------------------------------------------------------------------

const song = (
  id: string,
  songName: string,
  songArtistName: string,
  songAlbumName: string,
  seconds: number,
): SuggestionSong => ({
  songName,
  songArtistName,
  songAlbumName,
  songId: id,
  songProvider: 'alpha',
  alphaUrl: `https://alpha.example/track/${id}`,
  songPreviewUrl: `https://alpha.example/preview/${id}.mp3`,
  songDurationSeconds: seconds,
});

export const DEFAULT_SUGGESTION_LIST: { name: string; songs: SuggestionSong[] } = {
  name: 'Crowd Favorites',
  songs: [
    song('a1001', 'September', 'Earth, Wind & Fire', 'The Best of Earth, Wind & Fire', 215),
    song('a1002', 'Dancing Queen', 'ABBA', 'Arrival', 231),
    song('a1003', 'Uptown Funk', 'Mark Ronson', 'Uptown Special', 270),
    song('a1004', 'At Last', 'Etta James', 'At Last!', 180),
    song('a1005', 'Shut Up and Dance', 'Walk the Moon', 'Talking Is Hard', 199),
    song('a1006', 'Perfect', 'Ed Sheeran', 'Divide', 263),
    song('a1007', 'Mr. Brightside', 'The Killers', 'Hot Fuss', 222),
    song('a1008', "Can't Stop the Feeling!", 'Justin Timberlake', 'Trolls', 236),
  ],
};

export interface TemplateInput extends Partial<PermissionSettings> {
  title: string;
  description?: string | null;
  data: QuestionnaireData;
}

const field = (
  type: string,
  name: string,
  extra: Partial<QuestionnaireField> = {},
): QuestionnaireField => ({ uuid: randomUUID(), type, name, ...extra });

/** The templates a new business starts with; songs draw from its default suggestion list. */
export function defaultTemplates(suggestionListId: number): TemplateInput[] {
  return [
    {
      title: 'Wedding Planning',
      description: 'Everything we need to know for your wedding day.',
      allow_staff_view: true,
      allow_customer_view: true,
      allow_staff_edit: true,
      allow_customer_edit: true,
      data: {
        fieldGroups: [
          {
            name: 'The Couple',
            fields: [
              field('header', 'Tell us about you'),
              field('double_text_field', 'Names of the couple'),
              field('text_field', 'Wedding hashtag'),
              field('date_field', 'Wedding date'),
              field('dropdown', 'Dress code', { options: ['Casual', 'Cocktail', 'Black tie'] }),
            ],
          },
          {
            name: 'Timeline',
            fields: [
              field('text_field', 'Grand entrance', {
                timelineEnabled: true,
                timelineSettings: { timelineMode: 'start_time' },
              }),
              field('text_box', 'Dinner', {
                timelineEnabled: true,
                timelineSettings: { timelineMode: 'start_and_end_time' },
              }),
              field('text_field', 'Toasts', {
                timelineEnabled: true,
                timelineSettings: { timelineMode: 'length' },
              }),
            ],
          },
          {
            name: 'Music',
            fields: [
              field('song', 'First dance', {
                suggestionListId,
                allowCustomSongEntry: true,
              }),
              field('song_list', 'Must play', {
                suggestionListId,
                allowCustomSongEntry: false,
                allowMultipleEntries: true,
              }),
              field('song_list', 'Do not play', { allowMultipleEntries: true }),
              field('alpha_playlist', 'Your playlist'),
            ],
          },
          {
            name: 'Sign-off',
            fields: [
              field('checkbox', 'I confirm these details are final'),
              field('e_sign_field', 'Signature'),
            ],
          },
        ],
      },
    },
    {
      title: 'Corporate Event Details',
      description: 'Logistics for corporate events.',
      allow_staff_view: true,
      allow_customer_view: true,
      allow_staff_edit: true,
      allow_customer_edit: true,
      data: {
        fieldGroups: [
          {
            name: 'Logistics',
            fields: [
              field('triple_text_field', 'On-site contact (name, phone, email)'),
              field('radio_group', 'Loading dock', { options: ['Yes', 'No'] }),
              field('time_field', 'Load-in time'),
              field('color_picker_field', 'Brand color'),
              field('image_uploader_field', 'Logo', { allowMultipleEntries: true }),
            ],
          },
        ],
      },
    },
    {
      title: 'Post-Event Feedback',
      description: 'Sent after the event.',
      allow_staff_view: true,
      allow_customer_view: true,
      allow_staff_edit: false,
      allow_customer_edit: true,
      show_before_or_after: 'after',
      data: {
        fieldGroups: [
          {
            name: 'Feedback',
            fields: [
              field('radio_group', 'How did we do?', { options: ['Great', 'Good', 'Poor'] }),
              field('text_box', 'Anything we could improve?'),
            ],
          },
        ],
      },
    },
    {
      title: 'Staff Setup Checklist',
      description: 'Internal: what the crew checks before leaving.',
      allow_staff_view: false,
      allow_customer_view: false,
      allow_staff_edit: false,
      allow_customer_edit: false,
      show_before_or_after: 'before',
      data: {
        fieldGroups: [
          {
            name: 'Checklist',
            fields: [
              field('checkbox_group', 'Packed', { options: ['Camera', 'Lights', 'Backdrop'] }),
              field('quadruple_text_field', 'Crew (names)'),
              field('file_uploader_field', 'Venue floor plan'),
            ],
          },
        ],
      },
    },
  ];
}

export function createSuggestionList(
  ctx: SandboxContext,
  businessId: number,
  input: { name: string; songs: SuggestionSong[] },
): StoredRecord<SuggestionListAttrs> {
  return ctx.records.insert<SuggestionListAttrs>(
    'suggestion_list',
    businessId,
    (id) => ({ id, name: input.name, songs: input.songs.map((s) => ({ ...s })) }),
    { silent: true },
  );
}

/** The business's first suggestion list, made on first use. */
export function defaultSuggestionList(
  ctx: SandboxContext,
  businessId: number,
): StoredRecord<SuggestionListAttrs> {
  const { records } = ctx.records.list<SuggestionListAttrs>('suggestion_list', businessId, {
    includeDeleted: true,
    limit: 1,
  });
  return records[0] ?? createSuggestionList(ctx, businessId, DEFAULT_SUGGESTION_LIST);
}

function insertTemplate(
  ctx: SandboxContext,
  businessId: number,
  input: TemplateInput,
): StoredRecord<TemplateAttrs> {
  return ctx.records.insert<TemplateAttrs>(
    'questionnaire_template',
    businessId,
    (id) => ({
      id,
      title: input.title,
      description: input.description ?? null,
      data: structuredClone(input.data),
      allow_staff_view: input.allow_staff_view ?? true,
      allow_customer_view: input.allow_customer_view ?? true,
      allow_staff_edit: input.allow_staff_edit ?? true,
      allow_customer_edit: input.allow_customer_edit ?? true,
      show_before_or_after: input.show_before_or_after ?? null,
      created_at: businessNow(ctx, businessId),
    }),
    { silent: true },
  );
}

/** Creates the default list and templates the first time a business touches planning. */
export function ensurePlanningDefaults(ctx: SandboxContext, businessId: number): void {
  const list = defaultSuggestionList(ctx, businessId);
  const { total } = ctx.records.list('questionnaire_template', businessId, {
    includeDeleted: true,
    limit: 0,
  });
  if (total > 0) return;
  for (const t of defaultTemplates(list.id)) insertTemplate(ctx, businessId, t);
}

export function createQuestionnaireTemplate(
  ctx: SandboxContext,
  businessId: number,
  input: TemplateInput,
): StoredRecord<TemplateAttrs> {
  ensurePlanningDefaults(ctx, businessId);
  return insertTemplate(ctx, businessId, input);
}

function settingsOf(t: PermissionSettings): PermissionSettings {
  return {
    allow_staff_view: t.allow_staff_view,
    allow_customer_view: t.allow_customer_view,
    allow_staff_edit: t.allow_staff_edit,
    allow_customer_edit: t.allow_customer_edit,
    show_before_or_after: t.show_before_or_after,
  };
}

/** A copy of the template's questions and settings; later template edits do not reach it. */
export function attachQuestionnaire(
  ctx: SandboxContext,
  businessId: number,
  eventId: number,
  template: StoredRecord<TemplateAttrs>,
): StoredRecord<QuestionnaireAttrs> {
  return ctx.records.insert<QuestionnaireAttrs>(
    'questionnaire',
    businessId,
    (id) => ({
      id,
      event_id: eventId,
      questionnaire_template_id: template.id,
      kind: 'standard',
      title: template.attrs.title,
      data: structuredClone(template.attrs.data),
      values: {},
      external_url: null,
      provider: null,
      ...settingsOf(template.attrs),
      completed: false,
      completed_at: null,
      locked_for_customers: false,
      notifications_sent: [],
      created_at: businessNow(ctx, businessId),
    }),
    { parentId: eventId },
  );
}

/** Adds https:// to a URL written without a scheme, as the service stores it. */
export function normalizeExternalUrl(raw: string): string | undefined {
  const text = raw.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`;
  try {
    const url = new URL(withScheme);
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !url.hostname.includes('.'))
      return undefined;
    return withScheme;
  } catch {
    return undefined;
  }
}

export function createExternalQuestionnaire(
  ctx: SandboxContext,
  businessId: number,
  input: { event_id: number; title: string; external_url: string; provider?: string | null },
): StoredRecord<QuestionnaireAttrs> {
  return ctx.records.insert<QuestionnaireAttrs>(
    'questionnaire',
    businessId,
    (id) => ({
      id,
      event_id: input.event_id,
      questionnaire_template_id: null,
      kind: 'external',
      title: input.title,
      data: { fieldGroups: [] },
      values: {},
      external_url: normalizeExternalUrl(input.external_url) ?? input.external_url,
      provider: input.provider ?? null,
      // The customer must see the link to fill the form in; staff follow up on it.
      allow_staff_view: true,
      allow_customer_view: true,
      allow_staff_edit: true,
      allow_customer_edit: true,
      show_before_or_after: null,
      completed: false,
      completed_at: null,
      locked_for_customers: false,
      notifications_sent: [],
      created_at: businessNow(ctx, businessId),
    }),
    { parentId: input.event_id },
  );
}

/**
 * Marks a questionnaire complete: locks it against customer edits and records the
 * Questionnaire Submitted automated message and the staff push notification. Completing
 * twice sends nothing more.
 */
export function markQuestionnaireComplete(
  ctx: SandboxContext,
  record: StoredRecord<QuestionnaireAttrs>,
): StoredRecord<QuestionnaireAttrs> {
  if (record.attrs.completed) return record;
  const at = businessNow(ctx, record.businessId);
  return ctx.records.update(record, {
    completed: true,
    completed_at: at,
    locked_for_customers: true,
    notifications_sent: [
      ...record.attrs.notifications_sent,
      { kind: 'automated_message', name: 'Questionnaire Submitted', sent_at: at },
      { kind: 'staff_push', name: 'Questionnaire Submitted', sent_at: at },
    ],
  });
}

// ---- presentation -------------------------------------------------------------------------

export function templateItem(r: StoredRecord<TemplateAttrs>): Item {
  return item('questionnaire_template', { ...r.attrs });
}

export function questionnaireItem(r: StoredRecord<QuestionnaireAttrs>): Item {
  const a = r.attrs;
  return item(
    'questionnaire',
    {
      ...a,
      values: a.kind === 'external' ? {} : a.values,
      pdf_url: a.kind === 'external' ? null : `/questionnaires/${a.id}.pdf`,
    },
    { event: refOne('event', a.event_id) },
  );
}

export function suggestionListItem(r: StoredRecord<SuggestionListAttrs>): Item {
  return item('suggestion_list', { ...r.attrs });
}

// ---- visibility ---------------------------------------------------------------------------

type Role = 'admin' | 'staff' | 'customer';
function roleOf(caller: Caller): Role {
  return caller.role === 'admin' || caller.role === 'customer' ? caller.role : 'staff';
}

/** Per-user filter of the spec plus the before/after window around the booking's start. */
export function visibleTo(
  ctx: SandboxContext,
  role: Role,
  q: QuestionnaireAttrs,
  eventStartsAt: string | null | undefined,
): boolean {
  if (role === 'staff' && !q.allow_staff_view) return false;
  if (role === 'customer' && !q.allow_customer_view) return false;
  const start = eventStartsAt ? Date.parse(eventStartsAt) : NaN;
  if (Number.isNaN(start) || q.show_before_or_after === null) return true;
  const now = ctx.clock.now();
  return q.show_before_or_after === 'before' ? now < start : now >= start;
}

interface EventAttrs extends Record<string, unknown> {
  id: number;
  starts_at?: string | null;
}

function eventStart(ctx: SandboxContext, businessId: number, eventId: number) {
  return ctx.records.get<EventAttrs>('event', businessId, eventId)?.attrs.starts_at;
}

function loadQuestionnaire(
  ctx: SandboxContext,
  caller: Caller,
  rawId: string | undefined,
): StoredRecord<QuestionnaireAttrs> {
  const record = ctx.records.get<QuestionnaireAttrs>(
    'questionnaire',
    caller.businessId,
    Number(rawId),
  );
  if (
    !record ||
    // A questionnaire is reached through its event: one the caller may not see (another's
    // assigned event, to an assigned_* credential) hides its questionnaires as well.
    !eventVisible(ctx, caller, record.attrs.event_id) ||
    !visibleTo(
      ctx,
      roleOf(caller),
      record.attrs,
      eventStart(ctx, caller.businessId, record.attrs.event_id),
    )
  ) {
    throw notFound('Questionnaire', rawId ?? '');
  }
  return record;
}

function loadTemplate(ctx: SandboxContext, caller: Caller, id: number | string | undefined) {
  ensurePlanningDefaults(ctx, caller.businessId);
  const record = ctx.records.get<TemplateAttrs>(
    'questionnaire_template',
    caller.businessId,
    Number(id),
  );
  if (!record) throw notFound('Questionnaire template', id ?? '');
  return record;
}

// ---- input --------------------------------------------------------------------------------

type Body = Record<string, unknown>;

const PERMISSION_KEYS = [
  'allow_staff_view',
  'allow_customer_view',
  'allow_staff_edit',
  'allow_customer_edit',
  'show_before_or_after',
] as const;

/** Integration keys and apps cannot hold the business-settings permission these need. */
function refusePermissionChanges(body: Body): void {
  const sent = PERMISSION_KEYS.filter((k) => body[k] !== undefined);
  if (sent.length > 0) {
    throw forbidden(
      'business_settings_permission_required',
      `Changing ${sent.join(', ')} needs the business settings permission, which API credentials cannot hold`,
    );
  }
}

function reqInteger(body: Body, name: string, errors: FieldErrors): number | undefined {
  return numberField(body, name, errors, { ...ID, required: true }) ?? undefined;
}

function reqString(body: Body, name: string, errors: FieldErrors): string | undefined {
  const v = body[name];
  if (v === undefined || v === null || (typeof v === 'string' && v.trim() === ''))
    errors.add(name, "can't be blank");
  else if (typeof v !== 'string') errors.add(name, 'must be a string');
  else return v.trim();
  return undefined;
}

/** The event exists and the caller may see it (as GET /events/:id answers), else 404. */
function requireEvent(ctx: SandboxContext, caller: Caller, eventId: number): void {
  findVisibleEvent(ctx, caller, eventId);
}

function eventVisible(ctx: SandboxContext, caller: Caller, eventId: number): boolean {
  const event = getEvent(ctx, caller.businessId, eventId);
  return event !== undefined && canSeeEvent(caller, event);
}

function eventIdQuery(query: Record<string, unknown>): number {
  const id = queryId(query, 'event_id');
  // Missing, it is a 422 naming it, as every other required query parameter is.
  if (id === undefined) throw validationError({ event_id: ["Event can't be blank"] });
  return id;
}

// ---- handlers -----------------------------------------------------------------------------

export function questionnairesHandlers(): Handlers {
  return {
    'questionnaireTemplates.list': ({ ctx, caller, query }) => {
      ensurePlanningDefaults(ctx, caller.businessId);
      const p = paging(query, ctx.limits);
      const { records, total } = listPage<TemplateAttrs>(
        ctx,
        p,
        'questionnaire_template',
        caller.businessId,
        {
          ...(caller.role !== 'admin'
            ? { where: "json_extract(attrs, '$.allow_staff_view') = 1" }
            : {}),
          orderBy: "lower(json_extract(attrs, '$.title')), id",
        },
      );
      return listBody(records.map(templateItem), total, p);
    },

    'questionnaireTemplates.get': ({ ctx, caller, params }) => {
      const record = loadTemplate(ctx, caller, params.id);
      // A template a non-admin cannot list is not theirs to read either.
      if (caller.role !== 'admin' && !record.attrs.allow_staff_view)
        throw notFound('Questionnaire template', params.id ?? '');
      return single(templateItem(record));
    },

    'questionnaires.list': ({ ctx, caller, query }) => {
      const eventId = eventIdQuery(query);
      requireEvent(ctx, caller, eventId);
      const p = paging(query, ctx.limits);
      const start = eventStart(ctx, caller.businessId, eventId);
      const role = roleOf(caller);
      const visible = ctx.records
        .list<QuestionnaireAttrs>('questionnaire', caller.businessId, { parentId: eventId })
        .records.filter((r) => visibleTo(ctx, role, r.attrs, start));
      return listBody(
        visible.slice(p.offset, p.offset + p.per).map(questionnaireItem),
        visible.length,
        p,
      );
    },

    'questionnaires.get': ({ ctx, caller, params }) =>
      single(questionnaireItem(loadQuestionnaire(ctx, caller, params.id))),

    'questionnaires.attachTemplate': ({ ctx, caller, body: raw }) => {
      const body = raw as Body;
      const errors = new FieldErrors();
      const eventId = reqInteger(body, 'event_id', errors);
      const templateId = reqInteger(body, 'questionnaire_template_id', errors);
      errors.throwIfAny();
      refusePermissionChanges(body);
      requireEvent(ctx, caller, eventId!);
      const template = loadTemplate(ctx, caller, templateId);
      if (caller.role !== 'admin' && !template.attrs.allow_staff_view) {
        throw forbidden(
          'template_not_allowed',
          'Only admins may attach a template that staff cannot view',
        );
      }
      return single(
        questionnaireItem(attachQuestionnaire(ctx, caller.businessId, eventId!, template)),
      );
    },

    'questionnaires.createExternal': ({ ctx, caller, body: raw }) => {
      const body = raw as Body;
      const errors = new FieldErrors();
      const eventId = reqInteger(body, 'event_id', errors);
      const title = reqString(body, 'title', errors);
      const url = reqString(body, 'external_url', errors);
      if (url !== undefined && normalizeExternalUrl(url) === undefined)
        errors.add('external_url', 'is not a valid URL');
      const provider = body.provider;
      if (provider !== undefined && provider !== null && typeof provider !== 'string')
        errors.add('provider', 'must be a string');
      errors.throwIfAny();
      refusePermissionChanges(body);
      requireEvent(ctx, caller, eventId!);
      const record = createExternalQuestionnaire(ctx, caller.businessId, {
        event_id: eventId!,
        title: title!,
        external_url: url!,
        provider: typeof provider === 'string' && provider.trim() !== '' ? provider.trim() : null,
      });
      return single(questionnaireItem(record));
    },

    'questionnaires.updateAnswers': ({ ctx, caller, params, body: raw }) => {
      const record = loadQuestionnaire(ctx, caller, params.id);
      const body = raw as Body;
      refusePermissionChanges(body);
      const role = roleOf(caller);
      const q = record.attrs;
      if (role === 'staff' && !q.allow_staff_edit)
        throw forbidden('questionnaire_not_editable', 'Staff may not edit this questionnaire');
      if (role === 'customer' && !q.allow_customer_edit)
        throw forbidden('questionnaire_not_editable', 'Customers may not edit this questionnaire');
      if (role === 'customer' && q.locked_for_customers)
        throw forbidden('questionnaire_locked', 'This questionnaire was completed and is locked');
      const values = body.values;
      if (values === undefined || values === null)
        throw validationError({ values: ["Values can't be blank"] });
      if (q.kind === 'external') {
        throw validationError({
          values: [
            'Values cannot be stored: answers of an external questionnaire live with its provider',
          ],
        });
      }
      const problems = validateAnswers(values, q.data, {
        suggestionListSongs: (listId) =>
          ctx.records.get<SuggestionListAttrs>('suggestion_list', caller.businessId, listId)?.attrs
            .songs,
      });
      if (problems.length > 0) {
        const errors: Record<string, string[]> = {};
        for (const p of problems) (errors[p.path] ??= []).push(`${p.path} ${p.message}`);
        throw validationError(errors);
      }
      ctx.records.update(record, { values: mergeAnswers(q.values, values as AnswerPatch) });
      return ok();
    },

    'suggestionLists.list': ({ ctx, caller, query }) => {
      defaultSuggestionList(ctx, caller.businessId);
      const p = paging(query, ctx.limits);
      const { records, total } = listPage<SuggestionListAttrs>(
        ctx,
        p,
        'suggestion_list',
        caller.businessId,
        {},
      );
      return listBody(records.map(suggestionListItem), total, p);
    },

    'suggestionLists.get': ({ ctx, caller, params }) => {
      defaultSuggestionList(ctx, caller.businessId);
      const record = ctx.records.get<SuggestionListAttrs>(
        'suggestion_list',
        caller.businessId,
        Number(params.id),
      );
      if (!record) throw notFound('Suggestion list', params.id ?? '');
      return single(suggestionListItem(record));
    },
  };
}
