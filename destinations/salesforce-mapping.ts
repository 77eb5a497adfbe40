import type { SalesforceMappingOverrides } from '../config/salesforce-mapping.js';
import {
  fieldMapMerger,
  mappingSource,
  mappingWithOverrides,
  reservedFields,
} from './crm-fields.js';

/**
 * What ebsync writes to Salesforce: a lead becomes a Lead upserted by `EBS_Lead_Id__c`; an
 * event an Opportunity upserted by `EBS_Event_Id__c`, with a Contact per customer email
 * (upserted by `EBS_Email__c`) linked to it by an OpportunityContactRole, made once per email.
 * Field maps read Salesforce field API name → column of the mirrored table.
 */
export interface SalesforceMapping {
  leads: {
    lead: Record<string, string>;
    onDelete: 'delete' | 'keep';
  };
  events: {
    opportunity: Record<string, string>;
    /** Event status → StageName; `*` for any other status. */
    stages: Record<string, string>;
    contactRole: string;
    onDelete: 'delete' | 'keep';
  };
}

/** The external-id fields an admin creates in the org (docs/crm.md) and ebsync upserts by. */
export const SALESFORCE_KEYS = {
  Lead: 'EBS_Lead_Id__c',
  Opportunity: 'EBS_Event_Id__c',
  Contact: 'EBS_Email__c',
} as const;

/** Fields ebsync sets itself: the keys, the stage and the id, not remappable. */
const RESERVED = new Set<string>([...Object.values(SALESFORCE_KEYS), 'Id', 'StageName']);

// https://help.salesforce.com/s/articleView?id=sf.customize_opp_stages.htm — the stage
// values a new org's Opportunity stage picklist has.
export const DEFAULT_SALESFORCE_MAPPING: SalesforceMapping = {
  leads: {
    lead: {
      FirstName: 'first_name',
      LastName: 'last_name',
      Email: 'email',
      Phone: 'phone',
      Company: 'company_name',
      Description: 'subject',
    },
    onDelete: 'delete',
  },
  events: {
    opportunity: { Name: 'title', Amount: 'starting_balance_cents', CloseDate: 'starts_at_date' },
    stages: {
      proposal: 'Proposal/Price Quote',
      confirmed: 'Closed Won',
      completed: 'Closed Won',
      canceled: 'Closed Lost',
      '*': 'Prospecting',
    },
    contactRole: 'Decision Maker',
    onDelete: 'delete',
  },
};

const merge = fieldMapMerger(reservedFields(RESERVED));

/**
 * The defaults with the configured overrides applied (EBSYNC_SALESFORCE_MAPPING, or crm.salesforce.mapping in
 * the config file `file`, which refusals then name).
 */
export function salesforceMapping(
  overrides: SalesforceMappingOverrides = {},
  file?: string,
): SalesforceMapping {
  return mappingWithOverrides(
    DEFAULT_SALESFORCE_MAPPING,
    overrides,
    merge,
    ['leads.lead', 'events.opportunity'],
    mappingSource('salesforce', file),
  );
}
