import { z } from 'zod';
import { itemSchema, nullableBool, nullableInt, nullableString } from './envelope.js';
import { idSchema } from './formats.js';

/**
 * Questionnaires, their templates and song suggestion lists. Questions live in
 * data.fieldGroups (tabs of ordered fields); answers in values keyed by field uuid. Field
 * types outside the spec's tables are read as plain strings and left alone.
 */
export const questionnaireFieldSchema = z.looseObject({
  uuid: z.string(),
  type: z.string(),
  name: z.string().nullable().optional(),
  allowMultipleEntries: nullableBool,
  timelineEnabled: nullableBool,
  timelineSettings: z.looseObject({ timelineMode: nullableString }).nullable().optional(),
  suggestionListId: nullableInt,
  allowCustomSongEntry: nullableBool,
});
export type QuestionnaireFieldSpec = z.infer<typeof questionnaireFieldSchema>;

export const fieldGroupSchema = z.looseObject({
  name: z.string().nullable().optional(),
  fields: z.array(questionnaireFieldSchema),
});

export const questionnaireDataSchema = z.looseObject({ fieldGroups: z.array(fieldGroupSchema) });
export type QuestionnaireDataSpec = z.infer<typeof questionnaireDataSchema>;

/** values: { <uuid>: [ { <element>: value } ] }; answers to unknown field types are kept as they are. */
export const answerValuesSchema = z.record(z.string(), z.unknown());

const permissionFlags = {
  allow_staff_view: nullableBool,
  allow_customer_view: nullableBool,
  allow_staff_edit: nullableBool,
  allow_customer_edit: nullableBool,
  /** Limits visibility to before or after the booking date. */
  show_before_or_after: nullableString,
};

export const questionnaireAttributesSchema = z.looseObject({
  id: z.number().int(),
  /** standard or external; other values are kept as strings. */
  kind: nullableString,
  title: nullableString,
  external_url: nullableString,
  provider: nullableString,
  pdf_url: nullableString,
  event_id: nullableInt,
  questionnaire_template_id: nullableInt,
  data: questionnaireDataSchema.nullable().optional(),
  values: answerValuesSchema.nullable().optional(),
  ...permissionFlags,
});
export type QuestionnaireAttributes = z.infer<typeof questionnaireAttributesSchema>;
export const questionnaireSchema = itemSchema(questionnaireAttributesSchema);
export type Questionnaire = z.infer<typeof questionnaireSchema>;

export const questionnaireTemplateSchema = itemSchema(
  z.looseObject({
    id: z.number().int(),
    title: nullableString,
    data: questionnaireDataSchema.nullable().optional(),
    ...permissionFlags,
  }),
);
export type QuestionnaireTemplate = z.infer<typeof questionnaireTemplateSchema>;

export const suggestedSongSchema = z.looseObject({
  songName: nullableString,
  songArtistName: nullableString,
  songId: z.union([z.string(), z.number()]).nullable().optional(),
  songProvider: nullableString,
});
export const suggestionListSchema = itemSchema(
  z.looseObject({
    id: z.number().int(),
    name: nullableString,
    songs: z.array(suggestedSongSchema).nullable().optional(),
  }),
);
export type SuggestionList = z.infer<typeof suggestionListSchema>;

export const questionnaireListQuerySchema = z.strictObject({ event_id: idSchema });
export type QuestionnaireListQuery = z.input<typeof questionnaireListQuerySchema>;

export const attachTemplateBodySchema = z.strictObject({
  event_id: idSchema,
  questionnaire_template_id: idSchema,
});
export type AttachTemplateBody = z.input<typeof attachTemplateBodySchema>;

export const createExternalBodySchema = z.strictObject({
  event_id: idSchema,
  title: z.string().min(1),
  /** A missing scheme is stored as https by the service. */
  external_url: z.string().min(1),
  provider: z.string().optional(),
});
export type CreateExternalBody = z.input<typeof createExternalBodySchema>;

/** The answers patch: a key sent replaces that field's answer, null clears it. */
export const updateAnswersBodySchema = z.strictObject({
  values: z.record(
    z.string().min(1),
    z.union([z.array(z.record(z.string(), z.unknown())), z.null()]),
  ),
});
export type UpdateAnswersBody = z.input<typeof updateAnswersBodySchema>;
