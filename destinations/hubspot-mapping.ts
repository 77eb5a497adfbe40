import type { HubSpotMappingOverrides } from '../config/hubspot-mapping.js';
import {
  fieldMapMerger,
  mappingSource,
  mappingWithOverrides,
  reservedFields,
} from './crm-fields.js';

/**
 * What ebsync writes to HubSpot: a lead becomes a contact (matched by email) and a deal
 * (matched by `ebs_lead_id`), an event a deal (matched by `ebs_event_id`) linked to its
 * customers' contacts. Property maps read HubSpot property → column of the mirrored table.
 */
export interface HubSpotMapping {
  pipeline: string;
  leads: {
    contact: Record<string, string>;
    deal: Record<string, string>;
    dealStage: string;
    onDelete: 'archive' | 'keep';
  };
  events: {
    deal: Record<string, string>;
    /** Event status → deal stage id; `*` for any other status. */
    stages: Record<string, string>;
    onDelete: 'archive' | 'keep';
  };
}

/** The unique-value deal properties `ebsync destinations setup hubspot` creates. */
export const LEAD_KEY = 'ebs_lead_id';
export const EVENT_KEY = 'ebs_event_id';

// https://developers.hubspot.com/docs/api/crm/pipelines — stage ids of the default pipeline.
export const DEFAULT_HUBSPOT_MAPPING: HubSpotMapping = {
  pipeline: 'default',
  leads: {
    contact: {
      email: 'email',
      firstname: 'first_name',
      lastname: 'last_name',
      phone: 'phone',
      company: 'company_name',
    },
    deal: { dealname: 'subject', amount: 'estimated_budget_cents', closedate: 'event_date' },
    dealStage: 'appointmentscheduled',
    onDelete: 'archive',
  },
  events: {
    deal: { dealname: 'title', amount: 'starting_balance_cents', closedate: 'starts_at' },
    stages: {
      proposal: 'contractsent',
      confirmed: 'closedwon',
      completed: 'closedwon',
      canceled: 'closedlost',
      '*': 'contractsent',
    },
    onDelete: 'archive',
  },
};

/** Properties ebsync sets itself: keys and stage, not remappable. */
const RESERVED = new Set(['email', LEAD_KEY, EVENT_KEY, 'dealstage', 'pipeline']);

const merge = fieldMapMerger(reservedFields(RESERVED));

/**
 * The defaults with the configured overrides applied (EBSYNC_HUBSPOT_MAPPING, or crm.hubspot.mapping in
 * the config file `file`, which refusals then name).
 */
export function hubspotMapping(
  overrides: HubSpotMappingOverrides = {},
  file?: string,
): HubSpotMapping {
  return mappingWithOverrides(
    DEFAULT_HUBSPOT_MAPPING,
    overrides,
    merge,
    ['leads.contact', 'leads.deal', 'events.deal'],
    mappingSource('hubspot', file),
  );
}
