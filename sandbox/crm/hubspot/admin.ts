import type { FastifyInstance } from 'fastify';
import { registerCrmAdmin } from '../admin.js';
import { OBJECT_TYPES, type HubSpotState, type ObjectType } from './state.js';

/** HubSpot's admin surface: contacts and deals, plus the deal ↔ contact associations. */
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
}
