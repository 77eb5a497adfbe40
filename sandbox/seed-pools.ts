import { AUTOMATION_PLATFORM_SOURCE } from './resources/leads-model.js';
import type { Rng } from './seed-rng.js';
import { pad } from './time.js';

/**
 * The generator's word pools and the people made from them: names in many scripts, the
 * companies, venues, messages and marketing values a business's leads carry.
 */

export const FIRST_NAMES = [
  'José',
  'Zoë',
  'Anaïs',
  'Søren',
  'Björn',
  'Chloé',
  'Renée',
  'Élodie',
  'François',
  'Jürgen',
  'Łukasz',
  'Małgorzata',
  'Siobhán',
  'Seán',
  'Niamh',
  'Aoife',
  'Íñigo',
  'Mía',
  'Ørjan',
  'Åsa',
  'Mateo',
  'Olivia',
  'Liam',
  'Emma',
  'Noah',
  'Ava',
  'Sophia',
  'Jackson',
  'Aaliyah',
  'Priya',
  'Aarav',
  'Wei',
  'Mei',
  'Hiroshi',
  'Yuki',
  'Min-jun',
  'Ji-woo',
  'Oluwaseun',
  'Chiamaka',
  'Kwame',
  'Fatima',
  'Omar',
  'Layla',
  'Thảo',
  'Dmitri',
  'Анна',
  'Ольга',
  'Mary-Kate',
  'Jean-Luc',
  "D'Andre",
  "Ke'Shawn",
  'Inès',
  'Nikolaj',
  'Magnús',
  'Þóra',
  'Grace',
  'Ethan',
  'Isabella',
  'Lucas',
  'Amelia',
  'Benjamin',
  'Harper',
  'Elijah',
  'Evelyn',
  'James',
  'Camila',
] as const;

export const LAST_NAMES = [
  'Núñez',
  'Ålvik',
  'Ødegaard',
  "O'Brien",
  "O'Connor",
  'García-Márquez',
  'Smith-Jones',
  'Müller',
  'Schröder',
  'Łęcki',
  'Dvořák',
  'Nguyễn',
  'Trần',
  'Kowalski',
  'Johnson',
  'Williams',
  'Brown',
  'Garcia',
  'Martínez',
  'Hernández',
  'Lefèvre',
  'Dubois',
  'Björklund',
  'Kim',
  'Park',
  'Tanaka',
  'Yamamoto',
  'Okafor',
  'Adeyemi',
  'Mensah',
  'Patel',
  'Singh',
  'Chen',
  'Wang',
  'van der Berg',
  'de la Cruz',
  'MacDonald',
  'McKenzie',
  'St. James',
  'Abu-Bakr',
  'Haddad',
  'Cohen',
  'Rossi',
  'Bianchi',
  'Fernández',
  'Иванова',
  'Papadopoulos',
  'Øberg',
  "D'Angelo",
  'Çelik',
  'Şahin',
  'Jónsdóttir',
  'Lindqvist',
  'Taylor',
  'Anderson',
  'Thomas',
  'Moore',
  'Jackson',
  'White',
  'Harris',
  'Clark',
  'Lewis',
  'Robinson',
  'Walker',
] as const;

/** Names people type whole into the first-name box. */
export const WHOLE_NAMES = [
  '李雷',
  '韩梅梅',
  '王芳',
  '김민준',
  '佐藤 花子',
  'محمد علي',
  'Ngọc Ánh',
] as const;

export const COMPANIES = [
  'Acme Corp',
  'Globex',
  'Initech',
  'Umbrella Events',
  'Société Générale Events',
  'Müller & Söhne GmbH',
  'Ōtsuka Trading',
  'Blåbær AS',
  'Wayne Enterprises',
  "Bob's Burgers",
  'Zürich Re Social Club',
  'Señor Frog’s Catering',
  'Hooli',
  'Pied Piper',
] as const;

export const LEAD_TYPES = [
  'Wedding',
  'Corporate Event',
  'Birthday Party',
  'School Event',
  'Holiday Party',
  'Bar/Bat Mitzvah',
  'Quinceañera',
  'Graduation',
  'Fundraiser',
  'Baby Shower',
] as const;

export const VENUES = [
  'The Grand Ballroom',
  'Rosewood Barn',
  'Château Lumière',
  'Café Olé',
  'Hotel Nøbel',
  'The Loft at 5th',
  "St. Mary's Hall",
  'Riverside Pavilion',
  'Zürich House',
  'La Peña Cultural Center',
  'Åkerö Manor',
  'The Foundry',
  'Old Mill Estate',
] as const;

export const STREETS = [
  'Main St',
  'Oak Ave',
  'Elm Street',
  'Calle Ocho',
  'Rue Royale',
  'Peachtree Rd NE',
  'Broadway',
  'Market St',
  'Lakeshore Dr',
  'Avenida de las Américas',
] as const;

export const CITIES: readonly (readonly [string, string, string])[] = [
  ['Austin', 'TX', '78701'],
  ['Brooklyn', 'NY', '11201'],
  ['Chicago', 'IL', '60601'],
  ['San José', 'CA', '95113'],
  ['Miami', 'FL', '33101'],
  ['Seattle', 'WA', '98101'],
  ['Denver', 'CO', '80202'],
  ['New Orleans', 'LA', '70112'],
  ['Boston', 'MA', '02108'],
  ['Santa Fe', 'NM', '87501'],
  ["Coeur d'Alene", 'ID', '83814'],
  ['Nashville', 'TN', '37203'],
];

export const EMAIL_DOMAINS = [
  'example.com',
  'example.org',
  'example.net',
  'mail.example',
  'inbox.example',
  'corp.example',
] as const;
export const AREA_CODES = [212, 312, 415, 512, 617, 646, 702, 718, 305, 206] as const;

export const SUBJECTS = [
  'Photo booth for our wedding',
  'Availability?',
  'Quote request',
  'Corporate holiday party',
  '¿Tienen disponibilidad en junio?',
  'Sweet 16 🎉',
  'Booth + DJ package',
  'Pricing',
] as const;

export const MESSAGES = [
  'Hi! We are getting married next summer and would love a booth. What packages do you have?',
  'Could you send a quote for about 150 guests? Thanks 🙏',
  'Hola, ¿tienen disponibilidad para una quinceañera? Gracias.',
  'Is the Glam Booth available? We need it from 7 to 11 PM.\nAlso: do you travel out of town?',
  "We're planning a company party — 200 people, open bar, need a DJ and a booth.",
  'Bonjour ! Nous cherchons un photobooth pour notre mariage. Merci 😊',
  'Looking for something fun for my daughter’s graduation party.',
  'Second time booking with you — loved it last year!',
] as const;

export const NOTES = [
  'Called twice, left voicemail.',
  'Prefers text. Budget is flexible.',
  'Referred by the venue coordinator.',
  'Wants the gold sequin backdrop — check availability.',
  'Asked about a discount for a weekday date.',
  'Spoke in Spanish; follow up en español.',
] as const;

export const UTM_SOURCES = [
  'google',
  'facebook',
  'instagram',
  'newsletter',
  'theknot',
  'tiktok',
] as const;
export const UTM_MEDIUMS = ['cpc', 'social', 'email', 'referral', 'display'] as const;
export const UTM_CAMPAIGNS = [
  'spring_weddings',
  'holiday_parties_2025',
  'brand_search',
  'retargeting',
  'quince_es',
] as const;
export const UTM_TERMS = ['photo booth rental', 'wedding dj', 'cabine photo', '360 booth'] as const;
export const UTM_CONTENTS = ['hero_video', 'carousel_2', 'text_ad_b'] as const;

export const ORIGINS: readonly (readonly [string, number])[] = [
  ['Lead Form', 35],
  ['Contact Form', 15],
  ['Event Booking Form', 10],
  ['Online Booking', 10],
  ['API', 10],
  ['App', 12],
  [AUTOMATION_PLATFORM_SOURCE, 8],
];

export const STAFF = [
  { name: 'Søren Ødegaard', email: 'soren@sandbox.example' },
  { name: 'Anaïs Dubois', email: 'anais@sandbox.example' },
  { name: 'Marcus Lee', email: 'marcus@sandbox.example' },
] as const;

export const ADD_ONS = [
  { name: 'Guest Book', description: 'A scrapbook of every strip, signed by guests.', price: 99 },
  { name: 'Custom Props', description: 'Props themed to your event.', price: 49.5 },
  {
    name: 'Extra Attendant',
    description: 'A second attendant, by the hour.',
    price_method: 'hourly',
    hourly_price: 45,
  },
  { name: 'Glitter Backdrop', description: 'Sparkly backdrop upgrade.', price: 150 },
] as const;

export const LOCATIONS = [
  'Zoom: https://zoom.example/j/8675309',
  'Our studio — 12 Rue Royale',
  'Phone call',
  'Café Olé, Austin',
] as const;
export const PAYEES = [
  'Costco',
  'Amazon',
  'Shell',
  'PrintShop Zürich',
  'Señor Props',
  'U-Haul',
] as const;
export const PAYMENT_METHODS = ['Credit Card', 'Cash', 'Check', 'Bank Transfer', 'Venmo'] as const;
export const EXPENSE_DESCRIPTIONS = [
  'Printer paper and ink',
  'Gas for the van',
  'Props restock',
  'Backdrop repair',
  'Parking at venue',
] as const;
export const EVENT_NOTES = [
  'Customer confirmed the load-in time with the venue.',
  'Bring the extension cords — outlets are far from the stage.',
  'Nota: el cliente prefiere WhatsApp.',
  'Paid the deposit by check; waiting for it to clear.',
  'Venue requires a certificate of insurance 🧾',
] as const;

// ---------------------------------------------------------------------------------------------
// People

export interface Person {
  first: string | null;
  last: string | null;
}

export function person(rng: Rng): Person {
  if (rng.chance(0.02)) return { first: null, last: null };
  if (rng.chance(0.04)) return { first: rng.pick(WHOLE_NAMES), last: null };
  return { first: rng.pick(FIRST_NAMES), last: rng.chance(0.05) ? null : rng.pick(LAST_NAMES) };
}

export const fullName = (p: Person): string => [p.first, p.last].filter(Boolean).join(' ');

const FOLD: Record<string, string> = { ø: 'o', æ: 'ae', ß: 'ss', ł: 'l', đ: 'd', þ: 'th', ı: 'i' };

const asciiCache = new Map<string, string>();

/** 'Ødegaard' → 'odegaard'; scripts without a Latin spelling give ''. */
function ascii(text: string): string {
  let out = asciiCache.get(text);
  if (out === undefined) {
    out = text
      .toLowerCase()
      .replace(/[øæßłđþı]/g, (c) => FOLD[c] ?? '')
      .normalize('NFD')
      .replace(/[^a-z0-9]/g, '');
    asciiCache.set(text, out);
  }
  return out;
}

export const LENGTHS = [120, 180, 240, 300] as const;
export const TIMES_CONTACTED = [
  [0, 5],
  [1, 2],
  [2, 2],
  [3, 1],
  [6, 1],
] as const;

const EMAIL_STYLES = [
  ['dot', 5],
  ['initial', 2],
  ['underscore', 1],
] as const;

export function emailFor(rng: Rng, p: Person, n: number): string {
  const first = p.first ? ascii(p.first) : '';
  const last = p.last ? ascii(p.last) : '';
  const style = rng.weighted(EMAIL_STYLES);
  let base = first || last || 'guest';
  if (first && last) {
    if (style === 'dot') base = `${first}.${last}`;
    else if (style === 'initial') base = `${first.charAt(0)}${last}`;
    else base = `${first}_${last}`;
  }
  return `${base}${n}@${rng.pick(EMAIL_DOMAINS)}`;
}

const PHONE_STYLES = [
  ['paren', 4],
  ['dash', 3],
  ['dot', 1],
  ['e164', 1],
  ['uk', 1],
  ['de', 1],
] as const;

export function phone(rng: Rng): string {
  const style = rng.weighted(PHONE_STYLES);
  if (style === 'uk') return `+44 20 7946 0${pad(rng.int(0, 999), 3)}`;
  if (style === 'de') return `+49 30 ${rng.int(1_000_000, 9_999_999)}`;
  const area = rng.pick(AREA_CODES);
  const line = pad(rng.int(100, 199), 4);
  if (style === 'paren') return `(${area}) 555-${line}`;
  if (style === 'dash') return `${area}-555-${line}`;
  if (style === 'dot') return `${area}.555.${line}`;
  return `+1 ${area} 555 ${line}`;
}
