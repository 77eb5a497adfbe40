import { z } from 'zod';
import type { Transport } from '../transport.js';
import { paginate, type Page, type PagingOptions } from '../paging.js';
import { listSchema, okSchema, singleSchema } from '../schemas/envelope.js';
import {
  createLeadBodySchema,
  leadBookingQuestionSchema,
  leadListQuerySchema,
  leadSchema,
  type CreateLeadBody,
  type Lead,
  type LeadListQuery,
} from '../schemas/leads.js';

const leadList = listSchema(leadSchema);
const questionList = listSchema(leadBookingQuestionSchema);
const customQuestionsBody = z.strictObject({ custom_questions: z.record(z.string(), z.unknown()) });

/** Leads: create, read, search with paging, booking questions. */
export function leadsResource(t: Transport) {
  return {
    create: (body: CreateLeadBody) =>
      t.call('leads.create', {
        body,
        bodySchema: createLeadBodySchema,
        responseSchema: singleSchema(leadSchema),
      }),

    get: (leadId: number) =>
      t.call('leads.get', {
        params: { lead_id: leadId },
        responseSchema: singleSchema(leadSchema),
      }),

    /** One page; prefer `pages()` to read everything. */
    list: (query: LeadListQuery = {}) =>
      t.call('leads.list', { query, querySchema: leadListQuerySchema, responseSchema: leadList }),

    /** Every page of a search, largest pages first; see PagingOptions for the reach limit. */
    pages: (query: LeadListQuery = {}, options: PagingOptions = {}): AsyncGenerator<Page<Lead>> =>
      paginate(
        'leads.list',
        (page, per) =>
          t.call('leads.list', {
            query: { ...query, page, per },
            querySchema: leadListQuerySchema,
            responseSchema: leadList,
          }),
        options,
      ),

    /** How many leads a search matches (one request of one record). */
    count: async (query: LeadListQuery = {}): Promise<number> => {
      const body = await t.call('leads.list', {
        query: { ...query, page: 1, per: 1 },
        querySchema: leadListQuerySchema,
        responseSchema: leadList,
      });
      return body.meta.total_count ?? body.data.length;
    },

    bookingQuestions: (leadId: number) =>
      t.call('leads.bookingQuestions', {
        params: { lead_id: leadId },
        responseSchema: questionList,
      }),

    /** Answers by column_name; only the keys sent change. */
    answerBookingQuestions: (leadId: number, customQuestions: Record<string, unknown>) =>
      t.call('leads.updateBookingQuestions', {
        params: { lead_id: leadId },
        body: { custom_questions: customQuestions },
        bodySchema: customQuestionsBody,
        responseSchema: okSchema,
      }),
  };
}
