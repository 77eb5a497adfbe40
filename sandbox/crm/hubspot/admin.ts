import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { OBJECT_TYPES, type HubSpotState } from './state.js';

const limitsBody = z.strictObject({
  tenSecondly: z.number().int().min(1).optional(),
  daily: z.number().int().min(1).optional(),
});
const faultBody = z.strictObject({
  status: z.number().int().min(400).max(599),
  count: z.number().int().min(0),
});
const clockBody = z.union([
  z.strictObject({ advanceMs: z.number().int().min(0) }),
  z.strictObject({ to: z.iso.datetime() }),
]);

/**
 * The fake's own switches, for tests and demos (not HubSpot's): records, counters,
 * rate limits, injected faults and the clock. Behind `x-admin-token` like the sandbox's.
 */
export function registerHubSpotAdmin(
  app: FastifyInstance,
  state: HubSpotState,
  adminToken: string,
): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers['x-admin-token'] !== adminToken) {
      return reply.code(401).send({ error: 'x-admin-token is missing or wrong' });
    }
    return undefined;
  });
  const invalid = (message: string) => ({ error: message });

  app.get('/records/:type', (request, reply) => {
    const type = z.enum(OBJECT_TYPES).safeParse((request.params as { type: string }).type);
    if (!type.success) return reply.code(400).send(invalid('expected contacts or deals'));
    return [...state.objects[type.data].values()];
  });
  app.get('/associations', () => ({
    dealContacts: [...state.dealContacts].map((pair) => {
      const [dealId, contactId] = pair.split('|');
      return { dealId, contactId };
    }),
  }));
  app.get('/counters', () => state.counters);
  app.get('/limits', () => state.limits);
  app.put('/limits', (request, reply) => {
    const body = limitsBody.safeParse(request.body);
    if (!body.success) return reply.code(400).send(invalid('expected {tenSecondly?, daily?}'));
    state.limits = {
      tenSecondly: body.data.tenSecondly ?? state.limits.tenSecondly,
      daily: body.data.daily ?? state.limits.daily,
    };
    return state.limits;
  });
  app.put('/fault', (request, reply) => {
    const body = faultBody.safeParse(request.body);
    if (!body.success) return reply.code(400).send(invalid('expected {status: 400-599, count}'));
    state.fault = body.data;
    return state.fault;
  });
  app.get('/clock', () => ({ now: new Date(state.now()).toISOString() }));
  app.post('/clock', (request, reply) => {
    const body = clockBody.safeParse(request.body);
    if (!body.success) {
      return reply.code(400).send(invalid('expected {advanceMs} or {to: ISO 8601 instant}'));
    }
    state.clockOffsetMs =
      'advanceMs' in body.data
        ? state.clockOffsetMs + body.data.advanceMs
        : Date.parse(body.data.to) - Date.now();
    return { now: new Date(state.now()).toISOString() };
  });
  app.post('/reset', () => {
    state.reset();
    return { reset: true };
  });
}
