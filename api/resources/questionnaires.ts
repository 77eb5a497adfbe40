import { RequestValidationError } from '../errors.js';
import {
  validateAnswers,
  type AnswerPatch,
  type QuestionnaireData,
  type ValidateOptions,
} from '../schemas/questionnaire-answers.js';
import type { Transport } from '../transport.js';
import { listSchema, okSchema, singleSchema } from '../schemas/envelope.js';
import {
  attachTemplateBodySchema,
  createExternalBodySchema,
  questionnaireListQuerySchema,
  questionnaireSchema,
  questionnaireTemplateSchema,
  suggestionListSchema,
  updateAnswersBodySchema,
  type AttachTemplateBody,
  type CreateExternalBody,
  type Questionnaire,
} from '../schemas/questionnaires.js';

const questionnaireSingle = singleSchema(questionnaireSchema);

export interface UpdateAnswersOptions extends ValidateOptions {
  /**
   * The questionnaire (as fetched) or its question structure: when given, the answers are
   * checked against its field types before anything is sent.
   */
  questionnaire?: Questionnaire | { data: Questionnaire } | QuestionnaireData;
}

type QuestionsSource = NonNullable<UpdateAnswersOptions['questionnaire']>;

function isQuestionnaireData(source: QuestionsSource): source is QuestionnaireData {
  return Array.isArray((source as { fieldGroups?: unknown }).fieldGroups);
}

function isSingleAnswer(source: QuestionsSource): source is { data: Questionnaire } {
  const data = (source as { data?: unknown }).data;
  return typeof data === 'object' && data !== null && 'attributes' in data;
}

/** The question structure of a questionnaire as fetched (whole answer or its item) or as given. */
function questionsOf(source: QuestionsSource): { data: QuestionnaireData; kind?: string } {
  if (isQuestionnaireData(source)) return { data: source };
  const attrs = (isSingleAnswer(source) ? source.data : source).attributes;
  // The reader keeps fields loose (nullable names); validation reads only uuid, type and flags.
  const data = (attrs.data ?? { fieldGroups: [] }) as unknown as QuestionnaireData;
  return attrs.kind ? { data, kind: attrs.kind } : { data };
}

function checkAnswers(operation: string, values: AnswerPatch, options: UpdateAnswersOptions): void {
  if (!options.questionnaire) return;
  const { data, kind } = questionsOf(options.questionnaire);
  if (kind === 'external') {
    throw new RequestValidationError(
      `${operation}: an external questionnaire never stores answers`,
      { values: ['an external questionnaire takes no answers'] },
      { operation },
    );
  }
  const problems = validateAnswers(values, data, options);
  if (problems.length === 0) return;
  const fields: Record<string, string[]> = {};
  for (const p of problems) (fields[p.path] ??= []).push(p.message);
  throw new RequestValidationError(
    `${operation}: invalid answers (${problems.map((p) => `${p.path} ${p.message}`).join('; ')})`,
    fields,
    { operation },
  );
}

/** Questionnaires attached to bookings, and their answers. */
export function questionnairesResource(t: Transport) {
  return {
    /** A booking's questionnaires, as the caller may see them, ordered by id. */
    list: (eventId: number) =>
      t.call('questionnaires.list', {
        query: { event_id: eventId },
        querySchema: questionnaireListQuerySchema,
        responseSchema: listSchema(questionnaireSchema),
      }),

    get: (id: number) =>
      t.call('questionnaires.get', { params: { id }, responseSchema: questionnaireSingle }),

    /** Copies the template's questions and permission settings onto the booking. */
    attachTemplate: (body: AttachTemplateBody) =>
      t.call('questionnaires.attachTemplate', {
        body,
        bodySchema: attachTemplateBodySchema,
        responseSchema: questionnaireSingle,
      }),

    createExternal: (body: CreateExternalBody) =>
      t.call('questionnaires.createExternal', {
        body,
        bodySchema: createExternalBodySchema,
        responseSchema: questionnaireSingle,
      }),

    /**
     * Patches answers: a key sent replaces that field's answer, null clears it, the rest stay.
     * Build `values` with `answers.*` from questionnaire-answers; pass the questionnaire to
     * have them checked by field type first.
     */
    updateAnswers: async (id: number, values: AnswerPatch, options: UpdateAnswersOptions = {}) => {
      checkAnswers('questionnaires.updateAnswers', values, options);
      return t.call('questionnaires.updateAnswers', {
        params: { id },
        body: { values },
        bodySchema: updateAnswersBodySchema,
        responseSchema: okSchema,
      });
    },

    templates: questionnaireTemplatesResource(t),
  };
}

/** Questionnaire templates, ordered by title, each with its full question structure. */
export function questionnaireTemplatesResource(t: Transport) {
  return {
    list: () =>
      t.call('questionnaireTemplates.list', {
        responseSchema: listSchema(questionnaireTemplateSchema),
      }),
    get: (id: number) =>
      t.call('questionnaireTemplates.get', {
        params: { id },
        responseSchema: singleSchema(questionnaireTemplateSchema),
      }),
  };
}

/** Song suggestion lists of the business. */
export function suggestionListsResource(t: Transport) {
  return {
    list: () =>
      t.call('suggestionLists.list', { responseSchema: listSchema(suggestionListSchema) }),
    /** The list with its songs. */
    get: (id: number) =>
      t.call('suggestionLists.get', {
        params: { id },
        responseSchema: singleSchema(suggestionListSchema),
      }),
  };
}
