import type { Sandbox } from '../../sandbox/server.js';

/**
 * Which leads the queries a mirror can enumerate reach, found by brute force over the
 * sandbox's own rows, independently of the mirror's planner.
 *
 * The queries: `origin`, `lead_type`, `source` (equality) and `text`, a full-text search in
 * which every term must begin a word of the lead's name, company, e-mail, phone or venue (the
 * sandbox's semantics, docs/sandbox.md; a term with a dot is a phrase). Its terms are those a
 * pass can learn from other leads and try on this one: the e-mail's domain, the words of the
 * first and last name and of the venue's city, the phone's area code. Not `email` (an exact
 * lookup finds a lead one already knows), nor a word only this lead has (its e-mail's local
 * part, its notes): no pass can guess what it never saw.
 *
 * A lead is reachable when some such query holds it among its first `reach` results (ordered
 * by id). Of all the queries that hold a lead, the one with every filter value and every term
 * of the lead holds the fewest (any other holds all it holds): so a lead is reachable exactly
 * when fewer than `reach` leads before it match that query.
 */

interface OracleLead {
  id: number;
  origin: string | null;
  leadType: string | null;
  source: string | null;
  /** Every word the search indexes of the lead. */
  words: string[];
  /** The terms a query may hold: see TERM_FIELDS. */
  terms: string[];
}

/** The fields the sandbox's search indexes (sandbox/resources/lead-index.ts). */
const SEARCHED = [
  'first_name',
  'last_name',
  'company_name',
  'email',
  'phone',
  'venue_name',
  'venue_address',
  'venue_city',
  'venue_state',
  'venue_zip',
  'notes',
] as const;

/** Words as an FTS5 unicode61 tokenizer with diacritics removed would index them. */
function words(text: string): string[] {
  return text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== '');
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** A phone's area code: the first three digits after a North American country code. */
function areaCode(phone: string | null): string | null {
  if (phone === null) return null;
  const digits = phone.replace(/\D/g, '');
  const national = digits.length === 11 && digits.startsWith('1') ? digits.slice(1) : digits;
  return national.length >= 10 ? national.slice(0, 3) : null;
}

function leadsOf(sb: Sandbox): OracleLead[] {
  const rows = sb.ctx.db
    .prepare(
      `SELECT id, attrs FROM records WHERE type = 'lead' AND business_id = ? AND deleted_at IS NULL
       ORDER BY id`,
    )
    .all(sb.businessId) as { id: number; attrs: string }[];
  return rows.map((row) => {
    const a = JSON.parse(row.attrs) as Record<string, unknown>;
    const text = SEARCHED.map((f) => str(a[f]) ?? '').join(' ');
    const phone = str(a.phone);
    const email = str(a.email);
    const domain = email?.includes('@')
      ? email.slice(email.lastIndexOf('@') + 1).toLowerCase()
      : '';
    const area = areaCode(phone);
    const terms = [
      ...(domain ? [domain] : []),
      ...words(str(a.first_name) ?? ''),
      ...words(str(a.last_name) ?? ''),
      ...words(str(a.venue_city) ?? ''),
      ...(area ? [area] : []),
    ];
    return {
      id: row.id,
      origin: str(a.origin),
      leadType: str(a.lead_type),
      source: str(a.source),
      words: words(`${text} ${phone?.replace(/[-\s().]/g, '') ?? ''}`),
      terms: [...new Set(terms)],
    };
  });
}

/** Whether a term matches a lead: a word it begins, or for a dotted term the phrase. */
function termMatches(term: string, lead: OracleLead): boolean {
  const parts = words(term);
  if (parts.length <= 1) return lead.words.some((w) => w.startsWith(parts[0] ?? term));
  for (let i = 0; i + parts.length <= lead.words.length; i += 1) {
    if (
      parts.every((p, k) =>
        k === parts.length - 1 ? lead.words[i + k]!.startsWith(p) : lead.words[i + k] === p,
      )
    ) {
      return true;
    }
  }
  return false;
}

export interface ReachOracle {
  /** Live leads, by id. */
  total: number;
  /**
   * Whether a lead is in a query of the lead list (equality filters, and text terms as the
   * sandbox searches them: each term begins a word of the lead; a term with a dot a phrase).
   */
  holds(id: string, query: Readonly<Record<string, string>>): boolean;
  /** Ids (as the service's string ids) of the leads some query reaches. */
  reachable: Set<string>;
  /** Ids no query reaches. */
  unreachable: Set<string>;
}

/**
 * The enumeration's verdict on every live lead, or with `only` on those leads alone (a big
 * data set's misses: every lead's verdict at 200,000 takes minutes).
 */
export function reachOracle(sb: Sandbox, reach: number, only?: ReadonlySet<string>): ReachOracle {
  const leads = leadsOf(sb);
  // Every (word, lead) pair sorted by word: the leads with a word beginning with a term are
  // one contiguous run, found by binary search.
  const pairs: [string, number][] = [];
  leads.forEach((lead, index) => {
    for (const w of new Set(lead.words)) pairs.push([w, index]);
  });
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
  const lower = (term: string): number => {
    let lo = 0;
    let hi = pairs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pairs[mid]![0] < term) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  // Every word beginning with `term` sorts between it and it followed by the last code unit.
  const prefixRange = (term: string): [number, number] => [lower(term), lower(`${term}\uffff`)];
  const matches = (other: OracleLead, lead: OracleLead): boolean =>
    (lead.origin === null || other.origin === lead.origin) &&
    (lead.leadType === null || other.leadType === lead.leadType) &&
    (lead.source === null || other.source === lead.source) &&
    lead.terms.every((term) => termMatches(term, other));

  const reachable = new Set<string>();
  const unreachable = new Set<string>();
  leads.forEach((lead, index) => {
    if (only && !only.has(String(lead.id))) return;
    // Candidates: leads before this one with a word beginning with its rarest term (a
    // phrase's first word stands for it).
    let best: [number, number] | undefined;
    for (const term of lead.terms) {
      const range = prefixRange(words(term)[0] ?? term);
      if (!best || range[1] - range[0] < best[1] - best[0]) best = range;
    }
    let before = 0;
    if (best) {
      const seen = new Set<number>();
      for (let k = best[0]; k < best[1] && before < reach; k += 1) {
        const other = pairs[k]![1];
        if (other >= index || seen.has(other)) continue;
        seen.add(other);
        if (matches(leads[other]!, lead)) before += 1;
      }
    } else {
      // No word at all: every lead before it with the same filter values matches.
      for (let k = 0; k < index && before < reach; k += 1) {
        if (matches(leads[k]!, lead)) before += 1;
      }
    }
    (before < reach ? reachable : unreachable).add(String(lead.id));
  });
  const byId = new Map(leads.map((lead) => [String(lead.id), lead]));
  const holds = (id: string, query: Readonly<Record<string, string>>): boolean => {
    const lead = byId.get(id);
    if (!lead) return false;
    if (query.origin !== undefined && lead.origin !== query.origin) return false;
    if (query.lead_type !== undefined && lead.leadType !== query.lead_type) return false;
    if (query.source !== undefined && lead.source !== query.source) return false;
    return (query.text ?? '')
      .split(/\s+/)
      .filter((term) => term !== '')
      .every((term) => termMatches(term, lead));
  };
  return { total: leads.length, holds, reachable, unreachable };
}
