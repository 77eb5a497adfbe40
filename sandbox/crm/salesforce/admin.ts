import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { registerCrmAdmin } from '../admin.js';
import { SOBJECTS, type SObjectName, type SalesforceState } from './state.js';

const duplicateRuleBody = z.strictObject({ blockLeadEmails: z.boolean() });
const rotationBody = z.strictObject({ rotate: z.boolean() });
const deleteRefusalBody = z.strictObject({ ids: z.array(z.string().min(1).max(18)).max(1000) });

/**
 * Salesforce's admin surface: the records of each object (Recycle Bin included), the fields
 * each object has, a switch for a blocking duplicate rule on Lead emails, the records a
 * before-delete trigger refuses, and a switch for the connected app's refresh token rotation.
 */
export function registerSalesforceAdmin(
  app: FastifyInstance,
  state: SalesforceState,
  adminToken: string,
): void {
  registerCrmAdmin(
    app,
    state,
    {
      recordTypes: SOBJECTS,
      records: (type) => [...state.records[type as SObjectName].values()],
      views: {
        fields: () =>
          Object.fromEntries(SOBJECTS.map((type) => [type, [...state.fields[type].values()]])),
      },
    },
    adminToken,
  );
  app.put('/duplicate-rule', (request, reply) => {
    const body = duplicateRuleBody.safeParse(request.body);
    if (!body.success)
      return reply.code(400).send({ error: 'expected {blockLeadEmails: boolean}' });
    state.blockDuplicateLeadEmails = body.data.blockLeadEmails;
    return { blockLeadEmails: state.blockDuplicateLeadEmails };
  });
  app.put('/delete-refusals', (request, reply) => {
    const body = deleteRefusalBody.safeParse(request.body);
    if (!body.success) return reply.code(400).send({ error: 'expected {ids: Salesforce ids}' });
    state.deleteRefused.clear();
    for (const id of body.data.ids) state.deleteRefused.add(id);
    return { ids: [...state.deleteRefused] };
  });
  app.put('/refresh-token-rotation', (request, reply) => {
    const body = rotationBody.safeParse(request.body);
    if (!body.success) return reply.code(400).send({ error: 'expected {rotate: boolean}' });
    state.rotateRefreshTokens = body.data.rotate;
    return { rotate: state.rotateRefreshTokens };
  });
}
