import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { registerCrmAdmin } from '../admin.js';
import { OBJECT_TYPES, type HubSpotState, type ObjectType } from './state.js';

const validationRulesBody = z.strictObject({
  rules: z.array(
    z.strictObject({
      objectType: z.enum(OBJECT_TYPES),
      property: z.string().min(1),
      maxLength: z.number().int().min(1).optional(),
      pattern: z
        .string()
        .refine((p) => {
          try {
            new RegExp(p);
            return true;
          } catch {
            return false;
          }
        })
        .optional(),
    }),
  ),
});
const accountBody = z.strictObject({
  timeZone: z
    .string()
    .refine((zone) => {
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: zone });
        return true;
      } catch {
        return false;
      }
    })
    .nullable(),
  countsAgainstLimits: z.boolean(),
});
const readRefusalsBody = z.strictObject({
  ids: z.array(z.string().min(1)),
  category: z
    .string()
    .regex(/^[A-Z][A-Z_]*$/)
    .optional(),
  message: z.string().min(1).optional(),
});
const stallBody = z.strictObject({
  ms: z.number().int().min(0),
  count: z.number().int().min(0),
});

/**
 * HubSpot's admin surface: contacts and deals, the deal ↔ contact associations, and the
 * portal's property validation rules (what makes HubSpot refuse single items of a batch), its
 * time zone (the account-info answer and the daily reset), records a batch read refuses, and a stall (requests held before
 * they are answered: a hung portal).
 */
export function registerHubSpotAdmin(
  app: FastifyInstance,
  state: HubSpotState,
  adminToken: string,
): void {
  registerCrmAdmin(
    app,
    state,
    {
      recordTypes: OBJECT_TYPES,
      records: (type) => [...state.objects[type as ObjectType].values()],
      views: {
        associations: () => ({
          dealContacts: [...state.dealContacts].map((pair) => {
            const [dealId, contactId] = pair.split('|');
            return { dealId, contactId };
          }),
        }),
      },
    },
    adminToken,
  );
  app.get('/validation-rules', () => ({ rules: state.validationRules }));
  app.put('/validation-rules', (request, reply) => {
    const body = validationRulesBody.safeParse(request.body);
    if (!body.success) {
      return reply.code(400).send({
        error: 'expected {rules: [{objectType: contacts|deals, property, maxLength?, pattern?}]}',
      });
    }
    state.validationRules = body.data.rules.map((r) => ({
      objectType: r.objectType,
      property: r.property,
      ...(r.maxLength !== undefined ? { maxLength: r.maxLength } : {}),
      ...(r.pattern !== undefined ? { pattern: r.pattern } : {}),
    }));
    return { rules: state.validationRules };
  });
  app.put('/account', (request, reply) => {
    const body = accountBody.safeParse(request.body);
    if (!body.success) {
      return reply
        .code(400)
        .send({ error: 'expected {timeZone: an IANA zone or null, countsAgainstLimits: boolean}' });
    }
    state.timeZone = body.data.timeZone ?? undefined;
    state.accountInfoCounts = body.data.countsAgainstLimits;
    return { timeZone: body.data.timeZone, countsAgainstLimits: state.accountInfoCounts };
  });
  app.put('/read-refusals', (request, reply) => {
    const body = readRefusalsBody.safeParse(request.body);
    if (!body.success) {
      return reply
        .code(400)
        .send({ error: 'expected {ids: [HubSpot ids], category?: A_CATEGORY, message?}' });
    }
    const {
      ids,
      category = 'INTERNAL_ERROR',
      message = 'The object could not be read',
    } = body.data;
    state.readRefused.clear();
    for (const id of ids) state.readRefused.set(id, { category, message });
    return { ids, category, message };
  });
  app.put('/stall', (request, reply) => {
    const body = stallBody.safeParse(request.body);
    if (!body.success) return reply.code(400).send({ error: 'expected {ms, count}' });
    state.stall = body.data;
    return state.stall;
  });
}
