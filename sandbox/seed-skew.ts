import { AUTOMATION_PLATFORM_SOURCE, LEAD_SOURCES } from './resources/leads-model.js';
import type { Rng } from './seed-rng.js';
import { CITIES, FIRST_NAMES, LAST_NAMES, LEAD_TYPES, ORIGINS, type Person } from './seed-pools.js';

/**
 * Skewed leads (`ebsync sandbox --skew`): data shaped as a real business's inbox rather than
 * spread evenly. Most leads come from one origin and one mail provider, few carry a lead type
 * or a source, and names, area codes and company domains follow Zipf's law (a few very
 * common, a long tail seen once or twice). It is what makes a mirror cut below the e-mail
 * domain, and the reason the spec's equality filters alone cannot cut a big inbox.
 *
 * Every lead still has something a search can tell it apart by: a name, or else a phone (a
 * form asks for one or the other), so each one is reachable by some query of the spec's
 * filters that a pass can make from what it has read of other leads.
 */

export const SKEW = {
  /** Share of leads from the one origin. */
  mainOrigin: 0.85,
  /** Share of leads at the one mail provider. */
  mainProvider: 0.72,
  leadType: 0.06,
  source: 0.05,
  phone: 0.8,
  city: 0.5,
  firstNames: 600,
  lastNames: 3_000,
  companyDomains: 400,
  areaCodes: 40,
} as const;

export const MAIN_PROVIDER = 'mail.example';

/** The other providers and their weights; company domains take what is left. */
const PROVIDERS: readonly (readonly [string, number])[] = [
  ['example.com', 0.07],
  ['example.net', 0.05],
  ['inbox.example', 0.04],
  ['example.org', 0.03],
  ['corp.example', 0.02],
];

const ONSETS = ['b', 'br', 'c', 'ch', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's'];
const MORE_ONSETS = ['sh', 'st', 't', 'th', 'v', 'w', 'z', 'gr', 'tr', 'kr', 'pl', 'fl'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'ou', 'ie', 'y'];
const CODAS = ['', 'n', 'r', 'l', 's', 'th', 'nd', 'rt', 'x', 'm', 'ck', 'ng'];

/** Deterministic made-up words: the same index gives the same word everywhere. */
function syllableWord(index: number, syllables: number): string {
  const onsets = [...ONSETS, ...MORE_ONSETS];
  let n = index;
  let word = '';
  for (let s = 0; s < syllables; s += 1) {
    word += onsets[n % onsets.length]! + VOWELS[Math.floor(n / onsets.length) % VOWELS.length]!;
    n = Math.floor(n / (onsets.length * VOWELS.length)) + s * 7 + 3;
  }
  word += CODAS[index % CODAS.length]!;
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/** `count` distinct names: the pool's real ones first, then made-up ones. */
function namePool(real: readonly string[], count: number, syllables: number): string[] {
  const out = new Set<string>(real);
  for (let i = 0; out.size < count; i += 1) out.add(syllableWord(i * 7919 + syllables, syllables));
  return [...out].slice(0, count);
}

/** Picks an index of 0..n-1 with probability proportional to 1 / (rank + 1): Zipf, s = 1. */
class Zipf {
  private readonly cdf: Float64Array;

  constructor(n: number) {
    this.cdf = new Float64Array(n);
    let sum = 0;
    for (let k = 0; k < n; k += 1) this.cdf[k] = sum += 1 / (k + 1);
    for (let k = 0; k < n; k += 1) this.cdf[k]! /= sum;
  }

  pick(rng: Rng): number {
    const r = rng.next();
    let lo = 0;
    let hi = this.cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cdf[mid]! < r) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

const ascii = (text: string): string =>
  text
    .toLowerCase()
    .normalize('NFD')
    .replace(/[^a-z0-9]/g, '');

/** The skewed choices of one generated lead, drawn in a fixed order from the run's rng. */
export class SkewedLeads {
  private readonly firstNames = namePool(FIRST_NAMES, SKEW.firstNames, 2);
  private readonly lastNames = namePool(LAST_NAMES, SKEW.lastNames, 3);
  private readonly companies = Array.from(
    { length: SKEW.companyDomains },
    (_, i) => `${ascii(syllableWord(i * 104_729 + 11, 2))}.example`,
  );
  private readonly areaCodes = Array.from({ length: SKEW.areaCodes }, (_, i) =>
    String(201 + ((i * 577) % 780)),
  );
  private readonly firstZipf = new Zipf(SKEW.firstNames);
  private readonly lastZipf = new Zipf(SKEW.lastNames);
  private readonly companyZipf = new Zipf(SKEW.companyDomains);
  private readonly areaZipf = new Zipf(SKEW.areaCodes);
  private readonly cityZipf = new Zipf(CITIES.length);
  private readonly otherOrigins = ORIGINS.filter(([o]) => o !== 'Lead Form');

  person(rng: Rng): Person {
    if (rng.chance(0.01)) return { first: null, last: null };
    const first = this.firstNames[this.firstZipf.pick(rng)] ?? null;
    const last = rng.chance(0.03) ? null : (this.lastNames[this.lastZipf.pick(rng)] ?? null);
    return { first, last };
  }

  /** The e-mail people type into a form: their name in one of a few shapes, often a number. */
  email(rng: Rng, who: Person): string {
    const first = who.first ? ascii(who.first) : '';
    const last = who.last ? ascii(who.last) : '';
    const digits = (max: number) => String(rng.int(1, max));
    const style = rng.next();
    let local: string;
    if (!first && !last) local = `guest${digits(99_999)}`;
    else if (!last) local = `${first}${digits(9_999)}`;
    else if (style < 0.35) local = `${first}.${last}${rng.chance(0.4) ? digits(99) : ''}`;
    else if (style < 0.55) local = `${first}${last}${digits(99)}`;
    else if (style < 0.7) local = `${first.charAt(0)}${last}${rng.chance(0.5) ? digits(999) : ''}`;
    else if (style < 0.85) local = `${first}${digits(9_999)}`;
    else if (style < 0.9) local = `${last}.${first}`;
    else local = `${ascii(syllableWord(rng.int(0, 50_000), 2))}${digits(999)}`;
    return `${local}@${this.provider(rng)}`;
  }

  private provider(rng: Rng): string {
    let r = rng.next();
    if (r < SKEW.mainProvider) return MAIN_PROVIDER;
    r -= SKEW.mainProvider;
    for (const [domain, share] of PROVIDERS) {
      if (r < share) return domain;
      r -= share;
    }
    return this.companies[this.companyZipf.pick(rng)]!;
  }

  origin(rng: Rng): string {
    return rng.chance(SKEW.mainOrigin) ? 'Lead Form' : rng.weighted(this.otherOrigins);
  }

  leadType(rng: Rng): string | null {
    return rng.chance(SKEW.leadType) ? rng.pick(LEAD_TYPES) : null;
  }

  source(rng: Rng): string | null {
    return rng.chance(SKEW.source)
      ? rng.pick(LEAD_SOURCES.filter((s) => s !== AUTOMATION_PLATFORM_SOURCE))
      : null;
  }

  /** A phone for most; always one for a lead without a name. */
  phone(rng: Rng, who: Person): string | null {
    const nameless = who.first === null && who.last === null;
    if (!rng.chance(SKEW.phone) && !nameless) return null;
    const area = this.areaCodes[this.areaZipf.pick(rng)]!;
    const exchange = rng.int(200, 999);
    const line = String(rng.int(0, 9_999)).padStart(4, '0');
    return rng.chance(0.6) ? `(${area}) ${exchange}-${line}` : `${area}-${exchange}-${line}`;
  }

  city(rng: Rng): (typeof CITIES)[number] | null {
    return rng.chance(SKEW.city) ? (CITIES[this.cityZipf.pick(rng)] ?? null) : null;
  }
}
