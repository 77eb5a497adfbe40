import type { PlanGap } from './partition-plan.js';

/**
 * The lines a pass reports for records it could not reach: each from a real gap of the plan
 * (which query, why, which cuts were tried), and what no gap accounts for said as such, never
 * blamed on cuts that were not tried (DESIGN decision 11).
 */

const REASONS: Record<PlanGap['reason'], string> = {
  single_day: 'one day holds more than the reach, and a day cannot be cut',
  filters_exhausted: 'no filter value the pass has seen cuts it further',
  residual_skipped:
    'another cut would find fewer of them than it costs requests (EBSYNC_MIRROR_MIN_YIELD)',
  undated: 'they have no date, so no date window holds them',
};

const DIMENSION_NAMES: Record<string, string> = {
  text: 'e-mail domain',
  date: 'date windows',
};

/**
 * A query as a user may read it: filter values, but of a text search only its first term
 * (a whole e-mail domain); further terms are words of names and addresses, customer data
 * that stays out of logs and status.
 */
export function describeQuery(query: Readonly<Record<string, string>>): string {
  const parts = Object.entries(query).map(([name, value]) => {
    if (name !== 'text') return `${name}=${value}`;
    const [first, ...rest] = value.split(/\s+/);
    return rest.length === 0 ? `text=${first}` : `text=${first} +${rest.length} word(s)`;
  });
  return parts.length === 0 ? 'the whole list' : parts.join(', ');
}

/** What the pass's read by id of the ids no list returned did (workflows' IdProbe). */
export interface IdReadSummary {
  /** The last id read; null before the first. */
  after: number | null;
  probes: number;
  found: number;
}

/** Most queries named in a line; the rest are counted. */
const MAX_QUERIES_NAMED = 3;

function probedGapLine(
  resource: string,
  gaps: readonly PlanGap[],
  missing: number,
  expected: number,
  byId: IdReadSummary,
): string {
  const named = gaps.slice(0, MAX_QUERIES_NAMED).map((g) => describeQuery(g.query));
  const more = gaps.length - named.length;
  const queries = `${named.join('; ')}${more > 0 ? `; ${more} more` : ''}`;
  const stopped = byId.after === null ? '' : ` and stopped after id ${byId.after}`;
  return (
    `${resource}: ${missing} of ${expected} unreachable: queries held more than the service's ` +
    `reach (${queries}); reading ids one by one found ${byId.found} in ${byId.probes} ` +
    `reads${stopped}; which query the rest are in is not known`
  );
}

/**
 * Lines for `missing` records of `resource` the pass did not reach (the exact count: what
 * the service counts minus what the ledger saw), explained by the plan's gaps as far as they
 * go. A list's gap may be no gap of the mirror (bookings without a date come with their
 * leads), so gaps count at most what is still missing. The undated gap counts every booking
 * without a date, most of which arrived with their leads: it counts only what the gaps of
 * dated queries (each at most its own count) leave, or a day over the reach would be blamed
 * on the lack of a date.
 */
export function gapLines(
  resource: string,
  gaps: readonly PlanGap[],
  missing: number,
  expected: number,
  byId?: IdReadSummary,
): string[] {
  if (missing <= 0) return [];
  // The read by id found some of what the gaps counted, but not which gap each came from:
  // the gaps' counts no longer say where the rest are, and blamed queries whose every record
  // had been found while the ones missing were elsewhere.
  if (byId && byId.found > 0 && gaps.length > 0)
    return [probedGapLine(resource, gaps, missing, expected, byId)];
  const lines: string[] = [];
  let left = missing;
  const undated = (gap: PlanGap): boolean => gap.reason === 'undated';
  for (const gap of [...gaps.filter((g) => !undated(g)), ...gaps.filter(undated)]) {
    const count = Math.min(gap.count, left);
    if (count <= 0) break;
    left -= count;
    const tried = gap.tried.map((d) => DIMENSION_NAMES[d] ?? d).join(', ');
    lines.push(
      `${resource}: ${count} unreachable in ${describeQuery(gap.query)}: ${REASONS[gap.reason]}` +
        (tried ? ` (tried ${tried})` : ''),
    );
  }
  if (left > 0) {
    lines.push(
      `${resource}: ${left} of ${expected} unreachable that no cut accounts for: the service counted ` +
        `more than its pages held (records changed during the pass, or a search matched other ` +
        `records than it counted); the next pass reads them again`,
    );
  }
  return lines;
}
