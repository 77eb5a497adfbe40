import type { Handlers, SandboxContext } from '../context.js';
import type { RecordAttrs, StoredRecord } from '../db.js';
import { item, listBody, ok, paging, type Item } from '../envelope.js';
import { FieldErrors, notFound } from '../errors.js';
import type { AnswerValue, LeadAttrs } from './leads-model.js';

/**
 * Booking questions: the business's own questions asked when a lead books, answered per lead.
 *
 * Record type `booking_question` (owned by the business): BookingQuestionAttrs. A business
 * that has never had any gets a small default set the first time questions are used.
 * Answers live on the lead (`custom_questions` in LeadAttrs), keyed by column_name. The five
 * utm_* entries are built in: read-only views of the lead's tracking fields.
 */
export interface BookingQuestionAttrs extends RecordAttrs {
  id: number;
  column_name: string;
  name: string;
  label: string;
  /** Only 'text' is documented. */
  kind: string;
  link: string | null;
  options: string[];
  position: number;
  archived: boolean;
}

export const BUILT_IN_QUESTIONS = [
  'utm_source',
  'utm_campaign',
  'utm_medium',
  'utm_term',
  'utm_content',
] as const;
const BUILT_IN_LABELS: Record<(typeof BUILT_IN_QUESTIONS)[number], string> = {
  utm_source: 'UTM Source',
  utm_campaign: 'UTM Campaign',
  utm_medium: 'UTM Medium',
  utm_term: 'UTM Term',
  utm_content: 'UTM Content',
};

export const DEFAULT_QUESTIONS: readonly { label: string; column_name: string }[] = [
  { label: 'How did you hear about us?', column_name: 'how_did_you_hear_about_us' },
  { label: 'Number of guests', column_name: 'number_of_guests' },
  { label: 'Anything else we should know?', column_name: 'anything_else_we_should_know' },
];

function columnNameFor(label: string): string {
  const slug = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60);
  return slug || 'question';
}

/** Adds a question to a business (for seeds and the admin API); column names stay unique. */
export function createBookingQuestion(
  ctx: SandboxContext,
  businessId: number,
  input: {
    label: string;
    column_name?: string;
    kind?: string;
    options?: string[];
    link?: string | null;
    archived?: boolean;
  },
  options: { silent?: boolean } = {},
): StoredRecord<BookingQuestionAttrs> {
  const existing = ctx.records.list<BookingQuestionAttrs>('booking_question', businessId, {
    includeDeleted: true,
  }).records;
  const taken = new Set(existing.map((r) => r.attrs.column_name));
  const base = input.column_name ?? columnNameFor(input.label);
  let column = base;
  for (let n = 2; taken.has(column) || isBuiltIn(column); n += 1) column = `${base}_${n}`;
  return ctx.records.insert<BookingQuestionAttrs>(
    'booking_question',
    businessId,
    (id) => ({
      id,
      column_name: column,
      name: input.label,
      label: input.label,
      kind: input.kind ?? 'text',
      link: input.link ?? null,
      options: input.options ?? [],
      position: existing.length + 1,
      archived: input.archived ?? false,
    }),
    { silent: options.silent ?? false },
  );
}

function isBuiltIn(column: string): column is (typeof BUILT_IN_QUESTIONS)[number] {
  return (BUILT_IN_QUESTIONS as readonly string[]).includes(column);
}

/** The business's live questions by position, creating the default set on first use. */
export function businessQuestions(
  ctx: SandboxContext,
  businessId: number,
): StoredRecord<BookingQuestionAttrs>[] {
  const any = ctx.records.list('booking_question', businessId, { includeDeleted: true, limit: 1 });
  if (any.total === 0) {
    for (const q of DEFAULT_QUESTIONS) {
      createBookingQuestion(ctx, businessId, q, { silent: true });
    }
  }
  return ctx.records.list<BookingQuestionAttrs>('booking_question', businessId, {
    orderBy: "json_extract(attrs, '$.position'), id",
  }).records;
}

function isAnswer(value: unknown): value is AnswerValue {
  return (
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value)) ||
    (Array.isArray(value) && value.every((v) => typeof v === 'string'))
  );
}

/**
 * Checks answers keyed by column name (`custom_questions` of a create or PATCH body) and
 * returns them (null = clear), or records why not under `field`.
 */
export function readAnswers(
  ctx: SandboxContext,
  businessId: number,
  value: unknown,
  errors: FieldErrors,
  field = 'custom_questions',
): Record<string, AnswerValue | null> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    errors.add(field, 'must be an object keyed by question column name');
    return undefined;
  }
  const known = new Set(businessQuestions(ctx, businessId).map((q) => q.attrs.column_name));
  const out: Record<string, AnswerValue | null> = {};
  let bad = false;
  for (const [column, answer] of Object.entries(value as Record<string, unknown>)) {
    if (isBuiltIn(column)) {
      errors.add(field, `${column} is read-only`);
      bad = true;
    } else if (!known.has(column)) {
      errors.add(field, `${column} is not a booking question of this business`);
      bad = true;
    } else if (answer !== null && !isAnswer(answer)) {
      errors.add(field, `${column} must be a string, number, boolean or list of strings`);
      bad = true;
    } else {
      out[column] = answer;
    }
  }
  return bad ? undefined : out;
}

/** Current answers with the changes applied: only the keys given change; null removes one. */
export function mergeAnswers(
  current: Record<string, AnswerValue>,
  changes: Record<string, AnswerValue | null>,
): Record<string, AnswerValue> {
  const next = { ...current };
  for (const [column, answer] of Object.entries(changes)) {
    if (answer === null) delete next[column];
    else next[column] = answer;
  }
  return next;
}

export function formatAnswer(value: AnswerValue | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.join(', ');
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  return String(value);
}

/**
 * A lead's question entries: one per business question (archived ones only when answered),
 * then the built-in utm_* entries.
 */
export function leadQuestionItems(ctx: SandboxContext, lead: StoredRecord<LeadAttrs>): Item[] {
  const answers = lead.attrs.custom_questions ?? {};
  const items = businessQuestions(ctx, lead.businessId)
    .filter((q) => !q.attrs.archived || answers[q.attrs.column_name] !== undefined)
    .map((q) => {
      const value = answers[q.attrs.column_name] ?? null;
      return item('lead_booking_question', {
        id: q.id,
        lead_id: lead.id,
        booking_question_id: q.id,
        editable: true,
        column_name: q.attrs.column_name,
        name: q.attrs.name,
        label: q.attrs.label,
        kind: q.attrs.kind,
        link: q.attrs.link,
        value,
        formatted_value: formatAnswer(value),
        options: q.attrs.options,
        archived: q.attrs.archived,
      });
    });
  for (const column of BUILT_IN_QUESTIONS) {
    const value = lead.attrs[column];
    items.push(
      item('lead_booking_question', {
        id: column,
        lead_id: lead.id,
        booking_question_id: null,
        editable: false,
        column_name: column,
        name: column,
        label: BUILT_IN_LABELS[column],
        kind: 'text',
        link: null,
        value,
        formatted_value: formatAnswer(value),
        options: [],
        archived: false,
      }),
    );
  }
  return items;
}

/** Answered business questions as the lead's custom_fields array. */
export function customFields(
  ctx: SandboxContext,
  lead: StoredRecord<LeadAttrs>,
): { column_name: string; label: string; value: AnswerValue; formatted_value: string }[] {
  const answers = lead.attrs.custom_questions ?? {};
  if (Object.keys(answers).length === 0) return [];
  return businessQuestions(ctx, lead.businessId).flatMap((q) => {
    const value = answers[q.attrs.column_name];
    return value === undefined
      ? []
      : [
          {
            column_name: q.attrs.column_name,
            label: q.attrs.label,
            value,
            formatted_value: formatAnswer(value),
          },
        ];
  });
}

function getLead(ctx: SandboxContext, businessId: number, params: Record<string, string>) {
  const id = Number(params.lead_id);
  const lead = ctx.records.get<LeadAttrs>('lead', businessId, id);
  if (!lead) throw notFound('Lead', id);
  return lead;
}

export function leadQuestionsHandlers(): Handlers {
  return {
    'leads.bookingQuestions': ({ ctx, caller, params, query }) => {
      const lead = getLead(ctx, caller.businessId, params);
      const all = leadQuestionItems(ctx, lead);
      const p = paging(query, ctx.limits);
      return listBody(all.slice(p.offset, p.offset + p.per), all.length, p);
    },

    'leads.updateBookingQuestions': ({ ctx, caller, params, body }) => {
      const lead = getLead(ctx, caller.businessId, params);
      const errors = new FieldErrors();
      const raw = (body as Record<string, unknown>).custom_questions;
      if (raw === undefined || raw === null) {
        errors.add('custom_questions', "can't be blank");
        errors.throwIfAny();
      }
      const changes = readAnswers(ctx, caller.businessId, raw, errors);
      errors.throwIfAny();
      if (changes && Object.keys(changes).length > 0) {
        ctx.records.update(lead, {
          custom_questions: mergeAnswers(lead.attrs.custom_questions ?? {}, changes),
        });
      }
      return ok();
    },
  };
}
