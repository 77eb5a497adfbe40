import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES, type RouteDef } from '../../api/routes.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

/**
 * Throws deterministic junk at every route of the table and at the OAuth endpoints. Every
 * answer must be a 4xx (or a 200 when the junk happened to be valid) with a JSON body in
 * the spec's general or validation shape: never a 500, never a hang.
 * Reproduce a failure with FUZZ_SEED=<seed printed in the failure>.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed_2024);
const PER_ROUTE = 6;
const REQUEST_TIMEOUT_MS = 5_000;

/** mulberry32: tiny, seedable, good enough to pick junk. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

class Junk {
  constructor(private readonly random: () => number) {}
  int(max: number): number {
    return Math.floor(this.random() * max);
  }
  chance(p: number): boolean {
    return this.random() < p;
  }
  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }

  string(): string {
    return this.pick([
      '',
      ' ',
      'a',
      'Jamie',
      '日本語テキスト',
      '💥🎉',
      'مرحبا',
      '\u0000\u0001',
      '<script>alert(1)</script>',
      "' OR 1=1 --",
      'x'.repeat(10_000 + this.int(50_000)),
      '2024-02-30',
      '13-45-2024',
      '2024-06-01T25:61:00Z',
      '25:99 pm',
      '12:00 am',
      'not-an-email',
      'a@b.c',
      '-1',
      '1e400',
      'null',
      'true',
      '{"nested":"json"}',
    ]);
  }

  scalar(): unknown {
    return this.pick<() => unknown>([
      () => null,
      () => true,
      () => false,
      () => 0,
      () => -1,
      () => 1 + this.int(5),
      () => 1.5,
      () => -0.000001,
      () => 1e308,
      () => 2 ** 63,
      () => Number.MAX_SAFE_INTEGER + 2,
      () => this.string(),
    ])();
  }

  value(depth = 0): unknown {
    if (depth > 3 || this.chance(0.5)) return this.scalar();
    if (this.chance(0.4)) {
      return Array.from({ length: this.int(4) }, () => this.value(depth + 1));
    }
    return this.object(depth + 1);
  }

  object(depth = 0): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = this.int(6); i > 0; i -= 1) {
      const field = this.chance(0.9) ? this.pick(FIELDS) : this.string().slice(0, 50);
      out[field] = field.endsWith('_id') && this.chance(0.5) ? 1 + this.int(5) : this.value(depth);
    }
    return out;
  }

  pathId(): string {
    return this.pick([
      String(1 + this.int(5)),
      '0',
      '-1',
      'abc',
      '1.5',
      '1e3',
      '99999999999999999999999',
      '9007199254740993',
      encodeURIComponent('ü'),
      '%00',
      '%zz',
      encodeURIComponent('1/2'),
      'x'.repeat(300),
      ' 1',
      'null',
    ]);
  }

  query(): string {
    const keys = [
      'page',
      'per',
      'include',
      'status',
      'start_date',
      'end_date',
      'search_text',
      'lead_id',
      'event_id',
      'category_ids[]',
      'filter[status]',
      'a[b][c]',
      'sort',
      'past_or_future',
      'date',
      'user_id',
    ];
    const values = [
      '',
      '-1',
      '0',
      '1',
      '2',
      '99999999999999999999',
      'abc',
      '1.5',
      '[]',
      '%',
      '%E2%9C%93',
      '%zz',
      'x'.repeat(2000),
      'null',
      'true',
      '2024-01-01',
      '01-31-2024',
      'lead,events',
    ];
    const parts: string[] = [];
    for (let i = this.int(5); i >= 0; i -= 1) {
      const key = this.pick(keys);
      const repeat = this.chance(0.2) ? 2 : 1;
      for (let r = 0; r < repeat; r += 1) parts.push(`${key}=${this.pick(values)}`);
    }
    if (this.chance(0.1)) parts.push('=&&=x&[=]');
    return parts.join('&');
  }
}

const FIELDS = [
  'id',
  'name',
  'first_name',
  'last_name',
  'email',
  'phone',
  'status',
  'starts_at',
  'ends_at',
  'starts_at_date',
  'starts_at_time',
  'ends_at_time',
  'event_date',
  'event_date_start',
  'event_date_end',
  'start_date',
  'end_date',
  'selected_date',
  'length_in_minutes',
  'length_in_days',
  'lead_id',
  'lead_booking_id',
  'event_id',
  'event_booking_id',
  'event_type_id',
  'package_id',
  'package_group_id',
  'service_id',
  'user_id',
  'staff_id',
  'brand_id',
  'add_on_id',
  'add_on_category_id',
  'backdrop_id',
  'photobooth_background_id',
  'questionnaire_template_id',
  'design_id',
  'design_template_category_id',
  'template_name',
  'template_image_url',
  'template_purchase_url',
  'account_number',
  'guest_name',
  'guest_email',
  'guest_phone',
  'venue_name',
  'venue_address',
  'venue_place_id',
  'venue_latitude',
  'venue_longitude',
  'private_notes',
  'public_notes',
  'custom_title',
  'custom_questions',
  'booking_questions',
  'answers',
  'lead_type',
  'lead_extras',
  'price',
  'price_cents',
  'price_method',
  'amount',
  'total_amount',
  'paid_amount',
  'payment_method',
  'payment_date',
  'payee_type',
  'payee_value',
  'description',
  'quantity',
  'position',
  'completed',
  'quick_add',
  'utm_source',
  'ref_no',
  'additional_guests',
  'quick_event_bookings_attributes',
  'send_booking_confirmation_emails',
  'attributes',
  'type',
];

const MALFORMED_JSON = ['{bad', '{"a":', '[', 'nul', '"unterminated', '{"a":1}}', '{,}', '\u0000'];

/** `/api/v1/lead_bookings/{id}` → 'lead_booking': the wrapper key a Rails app would expect. */
function resourceKey(route: RouteDef): string {
  const segment =
    route.path
      .split('/')
      .filter((s) => s && !s.startsWith('{'))
      .pop() ?? 'item';
  return segment.endsWith('ies')
    ? `${segment.slice(0, -3)}y`
    : segment.endsWith('s')
      ? segment.slice(0, -1)
      : segment;
}

interface Probe {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  describe: string;
}

function probeFor(route: RouteDef, junk: Junk, base: string, keys: string[]): Probe {
  const path = route.path.replace(/\{\w+\}/g, () => junk.pathId());
  const query = junk.chance(0.7) ? junk.query() : '';
  const headers: Record<string, string> = { accept: 'application/json' };
  const credential = junk.int(10);
  if (credential < 8) headers['api-key'] = keys[0] ?? '';
  else if (credential === 8) headers['api-key'] = junk.pick(keys);
  let body: string | undefined;
  if (route.method !== 'GET' && (route.method !== 'DELETE' || junk.chance(0.3))) {
    const kind = junk.int(10);
    headers['content-type'] = 'application/json';
    if (kind < 2) body = junk.pick(MALFORMED_JSON);
    else if (kind < 4) body = JSON.stringify(junk.value());
    else if (kind === 4) {
      headers['content-type'] = junk.pick(['text/plain', 'application/x-www-form-urlencoded']);
      body = junk.chance(0.5) ? JSON.stringify(junk.object()) : 'a=1&b[]=2';
    } else if (kind === 5 && junk.chance(0.2)) {
      body = JSON.stringify({ blob: 'x'.repeat(1_100_000) });
    } else body = JSON.stringify({ [resourceKey(route)]: junk.object() });
  }
  return {
    method: route.method,
    url: `${base}${path}${query ? `?${query}` : ''}`,
    headers,
    ...(body !== undefined ? { body } : {}),
    describe: `${route.method} ${path.slice(0, 120)}?${query.slice(0, 120)} body=${(body ?? '').slice(0, 160)}`,
  };
}

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

async function send(probe: Probe): Promise<Answer> {
  const response = await fetch(probe.url, {
    method: probe.method,
    headers: probe.headers,
    redirect: 'manual',
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    ...(probe.body !== undefined ? { body: probe.body } : {}),
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    text: await response.text(),
  };
}

function isStringArrayRecord(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every(
      (messages) => Array.isArray(messages) && messages.every((m) => typeof m === 'string'),
    )
  );
}

/** Why an API answer breaks the contract, or undefined when it is fine. */
function apiProblem(answer: Answer): string | undefined {
  if (answer.status >= 500) return `status ${answer.status}`;
  if (answer.status !== 200 && (answer.status < 400 || answer.status > 499)) {
    return `unexpected status ${answer.status}`;
  }
  if (!answer.contentType.includes('application/json')) return `content-type ${answer.contentType}`;
  let body: any;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return 'body is not JSON';
  }
  if (answer.status === 200) {
    return body?.meta?.status === 'ok' ? undefined : 'a 200 without meta.status ok';
  }
  if (body?.meta?.status !== 'error') return 'error without meta.status error';
  const general =
    typeof body.status === 'string' &&
    typeof body.reason === 'string' &&
    typeof body.message === 'string';
  const validation = answer.status === 422 && isStringArrayRecord(body.errors);
  return general || validation
    ? undefined
    : `body in neither error shape: ${answer.text.slice(0, 200)}`;
}

let t: TestSandbox;
let keys: string[];
beforeAll(async () => {
  t = await startTestSandbox();
  keys = [
    t.sb.apiKey,
    t.sb.identity.createKey({ userId: t.sb.userId, permissions: ['lead_read'] }).key,
    'ik_not_a_real_key_at_all',
  ];
});
afterAll(async () => {
  expect(t.internalErrors, `internal errors (FUZZ_SEED=${SEED})`).toEqual([]);
  await t.close();
});

describe(`fuzzing every route (FUZZ_SEED=${SEED})`, () => {
  it.each((ROUTES as readonly RouteDef[]).map((route, index) => [route.id, route, index] as const))(
    '%s survives junk',
    async (_id, route, index) => {
      const junk = new Junk(prng(SEED + index * 7919));
      const failures: string[] = [];
      for (let i = 0; i < PER_ROUTE; i += 1) {
        const probe = probeFor(route, junk, t.sb.url, keys);
        try {
          const problem = apiProblem(await send(probe));
          if (problem) failures.push(`${problem} ← ${probe.describe}`);
        } catch (error) {
          failures.push(`${(error as Error).message} ← ${probe.describe}`);
        }
      }
      if (failures.length > 0) console.error(`fuzz failures with FUZZ_SEED=${SEED}`, failures);
      expect(failures, `FUZZ_SEED=${SEED}`).toEqual([]);
    },
  );

  it('answers a body over 1 MB with 413 in the general shape on every writing route', async () => {
    const failures: string[] = [];
    const body = JSON.stringify({ blob: 'x'.repeat(1_100_000) });
    for (const route of (ROUTES as readonly RouteDef[]).filter((r) => r.method !== 'GET')) {
      const probe: Probe = {
        method: route.method,
        url: `${t.sb.url}${route.path.replace(/\{\w+\}/g, '1')}`,
        headers: { 'content-type': 'application/json', 'api-key': t.sb.apiKey },
        body,
        describe: `${route.method} ${route.path} with 1.1 MB`,
      };
      try {
        const answer = await send(probe);
        const problem = apiProblem(answer);
        // 404: no handler yet for this route (the body is never read).
        if (problem || ![404, 413].includes(answer.status)) {
          failures.push(`${problem ?? answer.status} ← ${probe.describe}`);
        }
      } catch (error) {
        failures.push(`${(error as Error).message} ← ${probe.describe}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('the OAuth endpoints answer RFC 6749 errors for junk forms', async () => {
    const junk = new Junk(prng(SEED - 1));
    const failures: string[] = [];
    const names = ['grant_type', 'code', 'redirect_uri', 'client_id', 'code_verifier'];
    for (let i = 0; i < 40; i += 1) {
      const path = junk.pick(['/oauth/token', '/oauth/revoke']);
      const form = new URLSearchParams();
      for (const name of [...names, 'refresh_token', 'token']) {
        if (junk.chance(0.6)) form.append(name, String(junk.scalar()).slice(0, 500));
      }
      if (junk.chance(0.3))
        form.set('grant_type', junk.pick(['authorization_code', 'refresh_token']));
      const malformed = junk.chance(0.15);
      const probe: Probe = {
        method: 'POST',
        url: `${t.sb.url}${path}`,
        headers: {
          'content-type': malformed ? 'application/json' : 'application/x-www-form-urlencoded',
        },
        body: malformed ? junk.pick(MALFORMED_JSON) : form.toString(),
        describe: `POST ${path} ${form.toString().slice(0, 200)}`,
      };
      try {
        const answer = await send(probe);
        const body = answer.text ? (JSON.parse(answer.text) as Record<string, unknown>) : {};
        const ok =
          (answer.status === 200 && path === '/oauth/revoke') ||
          ([400, 401].includes(answer.status) &&
            typeof body.error === 'string' &&
            typeof body.error_description === 'string');
        if (!ok)
          failures.push(`status ${answer.status} ${answer.text.slice(0, 200)} ← ${probe.describe}`);
      } catch (error) {
        failures.push(`${(error as Error).message} ← ${probe.describe}`);
      }
    }
    for (let i = 0; i < 20; i += 1) {
      const query =
        junk.query() +
        `&client_id=${junk.pick(['', 'x', '%zz'])}&redirect_uri=${junk.string().slice(0, 100)}`;
      const url = `${t.sb.url}/oauth/authorize?${query}`;
      try {
        const answer = await send({ method: 'GET', url, headers: {}, describe: url });
        if (answer.status !== 400 || !answer.contentType.includes('text/html')) {
          failures.push(`status ${answer.status} ← GET ${url.slice(0, 200)}`);
        }
      } catch (error) {
        failures.push(`${(error as Error).message} ← GET ${url.slice(0, 200)}`);
      }
    }
    expect(failures, `FUZZ_SEED=${SEED}`).toEqual([]);
  });
});
