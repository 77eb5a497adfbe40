import { LEAD_INCLUDES } from '../../api/schemas/leads.js';
import type { Caller } from '../auth.js';
import type { Handlers, SandboxContext } from '../context.js';
import { listBody, paging, parseInclude, reachWindow, type Item } from '../envelope.js';
import { notFound } from '../errors.js';
import { bookingsOfLeads } from './lead-bookings.js';
import { pageOfRecords, type IndexFilter } from './lead-index.js';
import { bookingChildren, leadBookingItem, LeadView } from './lead-bookings-view.js';
import { leadBookingsHandlers } from './lead-bookings-routes.js';
import { leadQuestionsHandlers } from './lead-questions.js';
import { createLead } from './leads.js';
import type { LeadAttrs } from './leads-model.js';
import { readLeadInput } from './leads-input.js';
import { leadItem, leadBody } from './leads-view.js';
import { queryText } from '../query-params.js';

/** The lead routes: list with its filters, create, read; booking and question routes join. */

/** FTS5 query: every word must start a word of the lead (words quoted, so no operators). */
function ftsQuery(text: string): string | undefined {
  const terms = text
    .split(/\s+/)
    .map((t) => t.replace(/"/g, ''))
    .filter((t) => /[\p{L}\p{N}]/u.test(t));
  if (terms.length === 0) return undefined;
  return terms.map((t) => `"${t}"*`).join(' ');
}

function listLeads(ctx: SandboxContext, caller: Caller, query: Record<string, unknown>) {
  const include = parseInclude(query.include, LEAD_INCLUDES);
  const p = paging(query, ctx.limits);
  const filters: IndexFilter[] = [];
  const email = queryText(query, 'email');
  if (email !== undefined) filters.push({ where: 'email = ?', params: [email.toLowerCase()] });
  for (const name of ['origin', 'lead_type', 'source'] as const) {
    const value = queryText(query, name);
    if (value !== undefined) filters.push({ where: `${name} = ?`, params: [value] });
  }
  const text = queryText(query, 'text');
  const match = text === undefined ? undefined : ftsQuery(text);
  if (match !== undefined) {
    filters.push({
      where: 'id IN (SELECT rowid FROM lead_search WHERE lead_search MATCH ?)',
      params: [match],
    });
  }
  const { records: leads, total } = pageOfRecords<LeadAttrs>(
    ctx,
    'lead',
    caller.businessId,
    filters,
    reachWindow(p, ctx.limits),
  );
  const bookings = bookingsOfLeads(
    ctx,
    leads.map((l) => l.id),
  );
  const view = LeadView.of(ctx, caller);
  const sideload = include.has('lead_bookings');
  const data = leads.map((lead) => leadItem(view, lead, bookings.get(lead.id) ?? [], sideload));
  let included: Item[] | undefined;
  if (sideload) {
    const all = leads.flatMap((lead) => bookings.get(lead.id) ?? []);
    const children = bookingChildren(ctx, all);
    included = all.map((booking) => leadBookingItem(view, booking, children));
  }
  return listBody(data, total, p, included);
}

// ---------------------------------------------------------------------------------------------
// Handlers

export function leadsHandlers(): Handlers {
  return {
    'leads.create': ({ ctx, caller, body }) => {
      const input = readLeadInput(ctx, caller.businessId, body as Record<string, unknown>);
      const lead = createLead(ctx, caller.businessId, input, {
        origin: caller.kind === 'key' ? 'API' : 'App',
      });
      return leadBody(LeadView.of(ctx, caller), lead);
    },

    'leads.list': ({ ctx, caller, query }) => listLeads(ctx, caller, query),

    'leads.get': ({ ctx, caller, params, query }) => {
      const include = parseInclude(query.include, LEAD_INCLUDES);
      const id = Number(params.lead_id);
      const lead = ctx.records.get<LeadAttrs>('lead', caller.businessId, id);
      if (!lead) throw notFound('Lead', id);
      return leadBody(LeadView.of(ctx, caller), lead, include.has('lead_bookings'));
    },

    ...leadQuestionsHandlers(),
    ...leadBookingsHandlers(),
  };
}
