import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';

/** The switches every CRM fake's state has (HubSpotState, PipedriveState). */
export interface FakeSwitches {
  readonly counters: unknown;
  limits: object;
  fault: { status: number; count: number; route?: string | undefined } | undefined;
  clockOffsetMs: number;
  now(): number;
  reset(): void;
}

/** What every fake counts: calls by route, and the injected faults answered. */
interface RequestCounters {
  requests: Record<string, number>;
  faults: number;
}

/**
 * Counts a call by its route, and takes one injected fault when the switch holds any: the
 * status the fake must answer with instead (in its vendor's error shape), else undefined.
 */
export function countAndFault(
  fake: { counters: RequestCounters; fault: FakeSwitches['fault'] },
  request: FastifyRequest,
): number | undefined {
  const route = `${request.method} ${request.routeOptions.url ?? request.url}`;
  fake.counters.requests[route] = (fake.counters.requests[route] ?? 0) + 1;
  if (!fake.fault || fake.fault.count <= 0) return undefined;
  if (fake.fault.route !== undefined && fake.fault.route !== route) return undefined;
  fake.fault.count -= 1;
  fake.counters.faults += 1;
  return fake.fault.status;
}

/** What a fake shows beside its switches. */
export interface FakeRecords {
  /** Record type names (`contacts`, `persons`…); deleted or archived records are listed too. */
  readonly recordTypes: readonly string[];
  records(type: string): unknown[];
  /** Extra read-only views (HubSpot's associations). */
  readonly views?: Record<string, () => unknown>;
}

const faultBody = z.strictObject({
  status: z.number().int().min(400).max(599),
  count: z.number().int().min(0),
  /** Only calls of this route, as the counters name it (`POST /api/v2/:entity`). */
  route: z.string().min(1).max(200).optional(),
});
const clockBody = z.union([
  z.strictObject({ advanceMs: z.number().int().min(0) }),
  z.strictObject({ to: z.iso.datetime() }),
]);

/**
 * The fakes' own switches, for tests and demos (not the vendors'): records, counters, rate
 * limits, injected faults and the clock, behind `x-admin-token` like the sandbox's.
 */
export function registerCrmAdmin(
  app: FastifyInstance,
  surface: FakeSwitches,
  shown: FakeRecords,
  adminToken: string,
): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers['x-admin-token'] !== adminToken) {
      return reply.code(401).send({ error: 'x-admin-token is missing or wrong' });
    }
    return undefined;
  });
  const invalid = (message: string) => ({ error: message });
  const limitNames = Object.keys(surface.limits);
  const limitsBody = z.strictObject(
    Object.fromEntries(limitNames.map((n) => [n, z.number().int().min(1).optional()])),
  );

  app.get('/records/:type', (request, reply) => {
    const type = (request.params as { type: string }).type;
    if (!shown.recordTypes.includes(type)) {
      return reply.code(400).send(invalid(`expected ${shown.recordTypes.join(' or ')}`));
    }
    return shown.records(type);
  });
  for (const [name, view] of Object.entries(shown.views ?? {})) app.get(`/${name}`, view);
  app.get('/counters', () => surface.counters);
  app.get('/limits', () => surface.limits);
  app.put('/limits', (request, reply) => {
    const body = limitsBody.safeParse(request.body);
    if (!body.success) {
      return reply
        .code(400)
        .send(invalid(`expected {${limitNames.map((n) => `${n}?`).join(', ')}}`));
    }
    const next: Record<string, unknown> = { ...surface.limits };
    for (const [name, value] of Object.entries(body.data)) {
      if (typeof value === 'number') next[name] = value;
    }
    surface.limits = next;
    return surface.limits;
  });
  app.put('/fault', (request, reply) => {
    const body = faultBody.safeParse(request.body);
    if (!body.success) return reply.code(400).send(invalid('expected {status: 400-599, count}'));
    surface.fault = body.data;
    return surface.fault;
  });
  app.get('/clock', () => ({ now: new Date(surface.now()).toISOString() }));
  app.post('/clock', (request, reply) => {
    const body = clockBody.safeParse(request.body);
    if (!body.success) {
      return reply.code(400).send(invalid('expected {advanceMs} or {to: ISO 8601 instant}'));
    }
    surface.clockOffsetMs =
      'advanceMs' in body.data
        ? surface.clockOffsetMs + body.data.advanceMs
        : Date.parse(body.data.to) - Date.now();
    return { now: new Date(surface.now()).toISOString() };
  });
  app.post('/reset', () => {
    surface.reset();
    return { reset: true };
  });
}
