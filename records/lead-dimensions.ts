/**
 * How a lead search over the reach limit is cut: by the spec's filters `origin`, `lead_type`,
 * `source` (equality; the parts are disjoint), `text` with a whole e-mail domain (every lead
 * has an e-mail; the full-text search also looks at names, venues and notes, so parts may
 * overlap), and below the domain by a word the full-text search matches, added to the search's
 * text: a first name, a last name, a phone's area code, a venue's city (WORD_DIMENSIONS; each
 * lead has at most one of each, so parts overlap only where a word also stands in another
 * field). The values come from what was read: a sample of the search itself plus the values
 * seen so far.
 */
export const WORD_DIMENSIONS = ['first_name', 'last_name', 'phone_area', 'venue_city'] as const;
export type WordDimension = (typeof WORD_DIMENSIONS)[number];
export const LEAD_DIMENSIONS = [
  'origin',
  'lead_type',
  'source',
  'text',
  ...WORD_DIMENSIONS,
] as const;
export type LeadDimension = (typeof LEAD_DIMENSIONS)[number];

/** Dimensions whose parts hold no lead twice, so their counts prove what they miss. */
export const isDisjoint = (dimension: LeadDimension | 'date'): boolean =>
  dimension === 'date' ||
  dimension === 'origin' ||
  dimension === 'lead_type' ||
  dimension === 'source';

/** Dimensions that cut by adding a term to the search's text. */
export const isTextTerm = (dimension: LeadDimension): boolean =>
  dimension === 'text' || (WORD_DIMENSIONS as readonly string[]).includes(dimension);

/**
 * What a page of leads tells about its search, one entry per lead: filter values, the
 * e-mail's domain and a few single words of its name, phone and venue, the terms a cut may
 * search by. It stays in the plan (in the store, never in workflow history or logs).
 */
export interface LeadSample {
  origin: string | null;
  lead_type: string | null;
  source: string | null;
  /** The e-mail's domain, lower case. */
  domain: string | null;
  /** One searchable word per word dimension (lower case, no punctuation); null when none. */
  words?: Partial<Record<WordDimension, string | null>> | undefined;
  /** The first time this pass sees the lead (set by whoever read the page: see markFresh). */
  fresh?: boolean | undefined;
}

/** Values seen so far, with how often (bounded: see DISCOVERED_CAP). */
export type Discovered = Record<string, Record<string, number>>;

/**
 * Distinct values kept per dimension; the rarest go first when a long tail exceeds it.
 * Domains and words keep more: a cut by them is only as complete as the values known when it
 * is made, and the rarest are the ones no other cut reaches (a company's own domain, a rare
 * surname). At these caps a plan's values stay within a few hundred kilobytes.
 */
export const DISCOVERED_CAP = 200;
export const DISCOVERED_WORDS_CAP = 5_000;
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

/**
 * The words a full-text search would index of a value: lower case, accents dropped, split at
 * anything that is not a letter or a digit.
 */
export function searchWords(value: unknown): string[] {
  if (typeof value !== 'string') return [];
  return value
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== '');
}

/** The longest word (ties: the first): the one that tells most apart. */
const longest = (words: readonly string[]): string | null =>
  words.reduce<string | null>(
    (best, w) => (best === null || w.length > best.length ? w : best),
    null,
  );

/** A phone's area code: its first three digits after a North American country code. */
function phoneArea(phone: unknown): string | null {
  if (typeof phone !== 'string') return null;
  const groups = phone.split(/\D+/).filter((g) => g !== '');
  const digits = groups.join('');
  const national = digits.length === 11 && digits.startsWith('1') ? digits.slice(1) : digits;
  if (national.length < 10) return null;
  // A search term must be a word of the phone as written: its first group of three digits.
  const area = national.slice(0, 3);
  return groups.some((g) => g === area || g.startsWith(area)) ? area : null;
}

export function leadSampleOf(attributes: Readonly<Record<string, unknown>>): LeadSample {
  const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v : null);
  return {
    origin: text(attributes.origin),
    lead_type: text(attributes.lead_type),
    source: text(attributes.source),
    domain: domainOf(attributes.email),
    words: {
      // The longest word of a name: "D'Angelo" is searched by "angelo", not by "d", a term
      // that begins every word starting with a d and would make its part hold most of a list.
      first_name: longest(searchWords(attributes.first_name)),
      last_name: longest(searchWords(attributes.last_name)),
      phone_area: phoneArea(attributes.phone),
      venue_city: longest(searchWords(attributes.venue_city)),
    },
  };
}

/** Adds a page's values to what was discovered, keeping at most DISCOVERED_CAP per dimension. */
export function discover(into: Discovered, samples: readonly LeadSample[]): void {
  const add = (key: string, value: string | null | undefined) => {
    if (value === null || value === undefined) return;
    const counts = (into[key] ??= {});
    counts[value] = (counts[value] ?? 0) + 1;
  };
  for (const sample of samples) {
    for (const key of ['origin', 'lead_type', 'source', 'domain'] as const) add(key, sample[key]);
    for (const key of WORD_DIMENSIONS) add(key, sample.words?.[key]);
  }
  for (const [key, counts] of Object.entries(into)) {
    const cap =
      key === 'domain' || (WORD_DIMENSIONS as readonly string[]).includes(key)
        ? DISCOVERED_WORDS_CAP
        : DISCOVERED_CAP;
    const names = Object.keys(counts);
    if (names.length <= cap) continue;
    names.sort((a, b) => (counts[b] ?? 0) - (counts[a] ?? 0));
    for (const name of names.slice(cap)) delete counts[name];
  }
}

export interface DimensionChoice {
  dimension: LeadDimension;
  values: string[];
  /** Share of the sample the values reach (an estimate of the whole search's). */
  coverage: number;
  /** Requests the cut should cost, reading what it misses included (with a CutShape). */
  cost?: number;
}

/** The search being cut: its total_count, the page size granted, the reach. */
export interface CutShape {
  total: number;
  per: number;
  reach: number;
}

/**
 * What a cut misses is read through another cut of the same search, which reads much of what
 * this one read again: its leads cost this many times their pages.
 */
const MISSED_COST = 8;

/** The sample's value of a dimension for one lead, and where discover() counts it. */
function valueOf(dimension: LeadDimension, s: LeadSample): string | null {
  if (dimension === 'text') return s.domain;
  if (dimension === 'origin' || dimension === 'lead_type' || dimension === 'source') {
    return s[dimension];
  }
  return s.words?.[dimension] ?? null;
}
const discoveredKey = (dimension: LeadDimension): string =>
  dimension === 'text' ? 'domain' : dimension;

/**
 * Each value's expected share of the search: its share of the sample, blended with its share
 * of everything read so far (equal weight), so a value the sample missed is not taken for
 * empty and one it saw once is not taken for a hundredth of the search.
 */
function valueShares(
  dimension: LeadDimension,
  values: readonly string[],
  samples: readonly LeadSample[],
  discovered: Discovered,
): Map<string, number> {
  const inSample = new Map<string, number>();
  for (const s of samples) {
    const v = valueOf(dimension, s);
    if (v !== null) inSample.set(v, (inSample.get(v) ?? 0) + 1);
  }
  const global = discovered[discoveredKey(dimension)] ?? {};
  const globalTotal = Object.values(global).reduce((a, n) => a + n, 0);
  const shares = new Map<string, number>();
  for (const v of values) {
    const sampled = samples.length > 0 ? (inSample.get(v) ?? 0) / samples.length : 0;
    const seen = globalTotal > 0 ? (global[v] ?? 0) / globalTotal : 0;
    shares.set(v, samples.length > 0 && globalTotal > 0 ? (sampled + seen) / 2 : sampled || seen);
  }
  return shares;
}

/**
 * The share of a dimension's values the pass has not seen yet, by Good and Turing's estimate:
 * the share of sightings that were a value's only one. Names follow Zipf's law: a cut by the
 * names seen reaches fewer leads than the sample suggests, and this says how many fewer.
 */
function unseenShare(dimension: LeadDimension, discovered: Discovered): number {
  const counts = Object.values(discovered[discoveredKey(dimension)] ?? {});
  const sightings = counts.reduce((a, n) => a + n, 0);
  return sightings === 0 ? 0 : counts.filter((n) => n === 1).length / sightings;
}

/**
 * Prices a choice in requests: a request per part at least (its first page is asked whatever
 * it holds) and one more for a part over the reach (its probe, read again by its own parts),
 * the pages of what it reaches, and what it misses at MISSED_COST times its pages. A word or
 * domain expected to hold less than one lead is left out: its part would cost a request for
 * nothing, and its leads are what a later cut reaches.
 */
function priced(
  choice: DimensionChoice,
  samples: readonly LeadSample[],
  discovered: Discovered,
  shape: CutShape,
): DimensionChoice {
  const shares = valueShares(choice.dimension, choice.values, samples, discovered);
  const sampled = new Set(
    samples.map((s) => valueOf(choice.dimension, s)).filter((v): v is string => v !== null),
  );
  const words = isTextTerm(choice.dimension);
  const values = choice.values.filter(
    (v) => !words || sampled.has(v) || (shares.get(v) ?? 0) * shape.total >= 1,
  );
  const kept = new Set(values);
  const covered = samples.filter((s) => {
    const v = valueOf(choice.dimension, s);
    return v !== null && kept.has(v);
  }).length;
  const sampleCoverage = samples.length === 0 ? 0 : covered / samples.length;
  const coverage = Math.max(
    0,
    sampleCoverage - (words ? unseenShare(choice.dimension, discovered) : 0),
  );
  let overReach = 0;
  for (const v of values) if ((shares.get(v) ?? 0) * shape.total > shape.reach) overReach += 1;
  const cost =
    values.length +
    overReach +
    (coverage * shape.total) / shape.per +
    ((1 - coverage) * shape.total * MISSED_COST) / shape.per;
  return { dimension: choice.dimension, values, coverage, cost };
}

/**
 * The dimensions a search may still be cut by, best first. With the search's shape, best is
 * cheapest by `priced`; without it, the share of its sample the values reach, then the fixed
 * order. A dimension that cannot narrow the search (no value, or one value everyone shares)
 * is left out.
 */
export function rankDimensions(
  spent: readonly LeadDimension[],
  samples: readonly LeadSample[],
  discovered: Discovered,
  shape?: CutShape,
): DimensionChoice[] {
  const out: DimensionChoice[] = [];
  for (const dimension of LEAD_DIMENSIONS) {
    if (spent.includes(dimension)) continue;
    const raw =
      dimension === 'text'
        ? textChoice(samples, discovered)
        : isTextTerm(dimension)
          ? wordChoice(dimension as WordDimension, samples, discovered)
          : equalityChoice(dimension as EqualityDimension, samples, discovered);
    const choice = shape ? priced(raw, samples, discovered, shape) : raw;
    const narrows = choice.values.length > 1 || choice.coverage < 1;
    if (choice.values.length > 0 && choice.coverage > 0 && narrows) out.push(choice);
  }
  const order = (a: DimensionChoice, b: DimensionChoice) =>
    LEAD_DIMENSIONS.indexOf(a.dimension) - LEAD_DIMENSIONS.indexOf(b.dimension);
  return out.sort((a, b) =>
    shape ? (a.cost ?? 0) - (b.cost ?? 0) || order(a, b) : b.coverage - a.coverage || order(a, b),
  );
}

type EqualityDimension = 'origin' | 'lead_type' | 'source';

/**
 * A word dimension's parts: every word of it seen, in the sample or before. Each part adds
 * its word to the search's text; leads with no such word, or one not seen yet, are what the
 * cut misses.
 */
function wordChoice(
  dimension: WordDimension,
  samples: readonly LeadSample[],
  discovered: Discovered,
): DimensionChoice {
  const values = new Set(Object.keys(discovered[dimension] ?? {}));
  for (const s of samples) {
    const word = s.words?.[dimension];
    if (word) values.add(word);
  }
  const covered = samples.filter((s) => {
    const word = s.words?.[dimension];
    return word !== null && word !== undefined && values.has(word);
  }).length;
  return {
    dimension,
    values: [...values].sort(),
    coverage: samples.length === 0 ? 0 : covered / samples.length,
  };
}

function equalityChoice(
  dimension: EqualityDimension,
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
 * and each such lead is read twice. Every domain seen is a part (priced() drops those expected
 * to hold less than a lead): a small business's own domain is one request, where leaving it to
 * a cover would read the whole query again.
 */
function textChoice(samples: readonly LeadSample[], discovered: Discovered): DimensionChoice {
  const values = new Set(Object.keys(discovered.domain ?? {}));
  for (const s of samples) if (s.domain !== null) values.add(s.domain);
  const covered = samples.filter((s) => s.domain !== null && values.has(s.domain)).length;
  return {
    dimension: 'text',
    values: [...values].sort(),
    coverage: samples.length === 0 ? 0 : covered / samples.length,
  };
}

/**
 * A cut by e-mail domain made again for what it missed, with only the domains read since it
 * was made (or left out then as too rare): each is one request for leads no part of it could
 * hold, where a cut by another dimension reads the whole query again. Null when every domain
 * known is a part already. `found` estimates the leads it reaches: each value's sightings,
 * scaled to the query's share of everything seen.
 */
export function recutChoice(
  dimension: LeadDimension,
  taken: ReadonlySet<string>,
  discovered: Discovered,
  shape: CutShape,
): (DimensionChoice & { found: number }) | null {
  // Domains only: a domain names a business, so one seen anywhere is likely in a query of
  // the same origin. A name or a city seen elsewhere says little about one narrow query, and
  // re-cuts by them cost a request each for leads the query mostly does not hold.
  if (dimension !== 'text') return null;
  const counts = discovered[discoveredKey(dimension)] ?? {};
  const sightings = Object.values(counts).reduce((a, n) => a + n, 0);
  const values = Object.keys(counts)
    .filter((v) => !taken.has(v))
    .sort();
  if (values.length === 0 || sightings === 0) return null;
  // A value seen elsewhere is in this query by the query's share of everything seen; one
  // expected to hold less than half a lead here is left out. Each part costs a page at least.
  const scale = Math.min(1, shape.total / sightings);
  const expected = values
    .map((v) => [v, (counts[v] ?? 0) * scale] as const)
    .filter(([, n]) => n >= 0.5);
  if (expected.length === 0) return null;
  const found = expected.reduce((a, [, n]) => a + n, 0);
  return {
    dimension,
    values: expected.map(([v]) => v),
    coverage: found / Math.max(1, shape.total),
    cost: expected.reduce((a, [, n]) => a + Math.max(1, Math.ceil(n / shape.per)), 0),
    found,
  };
}
