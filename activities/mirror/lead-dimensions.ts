/**
 * How a lead search over the reach limit is cut: by the spec's filters `origin`, `lead_type`,
 * `source` (equality; the parts are disjoint) and `text` with a whole e-mail domain (every lead
 * has an e-mail; the full-text search also looks at names, venues and notes, so parts may
 * overlap). The values come from what was read: a sample of the search itself plus the values
 * seen so far.
 */
export const LEAD_DIMENSIONS = ['origin', 'lead_type', 'source', 'text'] as const;
export type LeadDimension = (typeof LEAD_DIMENSIONS)[number];

/** What a page of leads tells about its search, one entry per lead: no names, no addresses. */
export interface LeadSample {
  origin: string | null;
  lead_type: string | null;
  source: string | null;
  /** The e-mail's domain, lower case. */
  domain: string | null;
}

/** Values seen so far, with how often (bounded: see DISCOVERED_CAP). */
export type Discovered = Record<string, Record<string, number>>;

/** Distinct values kept per dimension; the rarest go first when a long tail exceeds it. */
export const DISCOVERED_CAP = 200;
/** A domain becomes a text part only when it was seen this often: one person's domain is no partition. */
const MIN_DOMAIN_COUNT = 2;
/** Origins the spec names as seen (the automation-platform one is unnamed): always tried. */
export const SPEC_ORIGINS = [
  'Lead Form',
  'Event Booking Form',
  'Contact Form',
  'App',
  'API',
  'Online Booking',
] as const;

export function domainOf(email: unknown): string | null {
  if (typeof email !== 'string') return null;
  const at = email.lastIndexOf('@');
  const domain =
    at < 0
      ? ''
      : email
          .slice(at + 1)
          .trim()
          .toLowerCase();
  return domain === '' ? null : domain;
}

export function leadSampleOf(attributes: Readonly<Record<string, unknown>>): LeadSample {
  const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v : null);
  return {
    origin: text(attributes.origin),
    lead_type: text(attributes.lead_type),
    source: text(attributes.source),
    domain: domainOf(attributes.email),
  };
}

/** Adds a page's values to what was discovered, keeping at most DISCOVERED_CAP per dimension. */
export function discover(into: Discovered, samples: readonly LeadSample[]): void {
  for (const sample of samples) {
    for (const key of ['origin', 'lead_type', 'source', 'domain'] as const) {
      const value = sample[key];
      if (value === null) continue;
      const counts = (into[key] ??= {});
      counts[value] = (counts[value] ?? 0) + 1;
    }
  }
  for (const counts of Object.values(into)) {
    const names = Object.keys(counts);
    if (names.length <= DISCOVERED_CAP) continue;
    names.sort((a, b) => (counts[b] ?? 0) - (counts[a] ?? 0));
    for (const name of names.slice(DISCOVERED_CAP)) delete counts[name];
  }
}

export interface DimensionChoice {
  dimension: LeadDimension;
  values: string[];
  /** Share of the sample the values reach (an estimate of the whole search's). */
  coverage: number;
}

/**
 * The dimensions a search may still be cut by, best first: the share of its sample the
 * values reach, then the fixed order. A dimension that cannot narrow the search (no value, or
 * one value everyone shares) is left out.
 */
export function rankDimensions(
  spent: readonly LeadDimension[],
  samples: readonly LeadSample[],
  discovered: Discovered,
): DimensionChoice[] {
  const out: DimensionChoice[] = [];
  for (const dimension of LEAD_DIMENSIONS) {
    if (spent.includes(dimension)) continue;
    const choice =
      dimension === 'text'
        ? textChoice(samples, discovered)
        : equalityChoice(dimension, samples, discovered);
    const narrows = choice.values.length > 1 || choice.coverage < 1;
    if (choice.values.length > 0 && choice.coverage > 0 && narrows) out.push(choice);
  }
  return out.sort(
    (a, b) =>
      b.coverage - a.coverage ||
      LEAD_DIMENSIONS.indexOf(a.dimension) - LEAD_DIMENSIONS.indexOf(b.dimension),
  );
}

function equalityChoice(
  dimension: Exclude<LeadDimension, 'text'>,
  samples: readonly LeadSample[],
  discovered: Discovered,
): DimensionChoice {
  const values = new Set(Object.keys(discovered[dimension] ?? {}));
  for (const s of samples) if (s[dimension] !== null) values.add(s[dimension]);
  if (dimension === 'origin') for (const o of SPEC_ORIGINS) values.add(o);
  const covered = samples.filter((s) => s[dimension] !== null).length;
  return {
    dimension,
    values: [...values].sort(),
    coverage: samples.length === 0 ? 0 : covered / samples.length,
  };
}

/**
 * Text parts are whole domains ("example.com", not its word "com"): a single word of a domain
 * also finds every lead whose notes or venue hold a word it begins ("company", "corporate"),
 * and each such lead is read twice.
 */
function textChoice(samples: readonly LeadSample[], discovered: Discovered): DimensionChoice {
  const global = discovered.domain ?? {};
  const inSample = new Map<string, number>();
  for (const s of samples)
    if (s.domain !== null) inSample.set(s.domain, (inSample.get(s.domain) ?? 0) + 1);
  const chosen = new Set<string>();
  for (const [domain, n] of inSample) {
    if (n >= MIN_DOMAIN_COUNT || (global[domain] ?? 0) >= MIN_DOMAIN_COUNT) chosen.add(domain);
  }
  const covered = samples.filter((s) => s.domain !== null && chosen.has(s.domain)).length;
  return {
    dimension: 'text',
    values: [...chosen].sort(),
    coverage: samples.length === 0 ? 0 : covered / samples.length,
  };
}
