import type { Sandbox } from '../sandbox/server.js';
import { createLead, type LeadInput } from '../sandbox/resources/leads.js';

/**
 * Deterministic leads for benchmarks: the same seed gives the same leads, so runs compare.
 * Used only when `ebsync sandbox --leads` is not available; otherwise the CLI seeds.
 */

/** mulberry32: small, fast, good enough for fixtures. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const FIRST = ['Avery', 'Jordan', 'Riley', 'Sam', 'Morgan', 'Casey', 'Taylor', 'Quinn', 'Jamie'];
const LAST = ['Nguyen', 'Garcia', 'Smith', 'Okafor', 'Kowalski', 'Rossi', 'Haddad', 'Larsen'];
const CITIES = [
  ['Austin', 'TX', '78701'],
  ['Denver', 'CO', '80202'],
  ['Portland', 'OR', '97205'],
  ['Raleigh', 'NC', '27601'],
  ['Madison', 'WI', '53703'],
] as const;
const VENUES = ['The Grand Hall', 'Riverside Barn', 'Hotel Aurora', 'Cedar Pavilion', null];
const SOURCES = ['Lead Form', 'Online Booking', 'Manual Entry', 'API'] as const;
const TYPES = ['Wedding', 'Corporate', 'Birthday', 'School', null];
const TIMES = ['10:00 AM', '1:30 PM', '5:00 PM', '6:00 PM', '7:30 PM'];

function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)] as T;
}

/** Lead `i` of a seeded set: contact, venue, source; 60% ask for a date and a package (one booking). */
export function generateLead(
  rand: () => number,
  i: number,
  packageIds: readonly number[],
): LeadInput {
  const first = pick(rand, FIRST);
  const last = pick(rand, LAST);
  const [city, state, zip] = pick(rand, CITIES);
  const input: LeadInput = {
    email: `${first}.${last}.${i}@example.com`.toLowerCase(),
    first_name: first,
    last_name: last,
    phone: `(555) ${String(100 + (i % 900))}-${String(1000 + (i % 9000))}`,
    company_name: rand() < 0.2 ? `${last} & Co` : null,
    lead_source: pick(rand, SOURCES),
    lead_type: pick(rand, TYPES),
    venue_name: pick(rand, VENUES),
    venue_city: city,
    venue_state: state,
    venue_zip: zip,
    estimated_number_guests: 20 + Math.floor(rand() * 300),
    notes: rand() < 0.3 ? 'Asked about props and a guest book.' : null,
  };
  if (packageIds.length > 0 && rand() < 0.6) {
    const day = 1 + Math.floor(rand() * 28);
    const month = 1 + Math.floor(rand() * 12);
    input.event_date = `2027-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
    input.event_time = pick(rand, TIMES);
    input.length_in_minutes = 120 + 60 * Math.floor(rand() * 4);
    input.package_id = pick(rand, packageIds);
  }
  return input;
}

/** Inserts `count` leads into the sandbox's default business in one transaction. */
export function seedLeads(sb: Sandbox, count: number, seed = 1): void {
  const { ctx, businessId } = sb;
  const packageIds = (
    ctx.db
      .prepare("SELECT id FROM records WHERE type = 'package' AND business_id = ? ORDER BY id")
      .all(businessId) as { id: number }[]
  ).map((r) => r.id);
  const rand = prng(seed);
  const start = Date.parse('2025-01-01T00:00:00Z');
  const span = 2 * 365 * 86_400_000;
  ctx.db.transaction(() => {
    for (let i = 1; i <= count; i++) {
      createLead(ctx, businessId, generateLead(rand, i, packageIds), {
        origin: 'Lead Form',
        createdAt: start + Math.floor((span * i) / count),
        silent: true,
      });
    }
  })();
}
