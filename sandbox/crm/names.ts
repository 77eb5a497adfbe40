/**
 * The CRMs with a local fake; `ebsync sandbox --crm` takes a list of these. A module of its own
 * so the command's help can name them without loading the fakes (fastify and their routes).
 */
export const CRM_FAKES = ['hubspot', 'pipedrive', 'salesforce'] as const;
export type CrmFakeName = (typeof CRM_FAKES)[number];
