import type { PipedriveMappingOverrides } from '../config/pipedrive-mapping.js';
import { fieldMapMerger, mappingSource, mappingWithOverrides } from './crm-fields.js';

/**
 * What ebsync writes to Pipedrive: a lead becomes a person (found by email) and, unless
 * `createDeal` is false, a deal carrying `ebs_lead_id`; an event a deal carrying
 * `ebs_event_id`, linked to the person of its first customer email. Field maps read Pipedrive
 * field (standard name or custom-field key) → column of the mirrored table.
 */
export interface PipedriveMapping {
  currency: string;
  leads: {
    person: Record<string, string>;
    deal: Record<string, string>;
    createDeal: boolean;
    onDelete: 'delete' | 'keep';
  };
  events: {
    deal: Record<string, string>;
    /** Event status → deal status; `*` for any other status. */
    status: Record<string, 'open' | 'won' | 'lost'>;
    onDelete: 'delete' | 'keep';
  };
}

/** The deal custom fields `ebsync destinations setup pipedrive` creates (by name). */
export const PIPEDRIVE_LEAD_FIELD = 'ebs_lead_id';
export const PIPEDRIVE_EVENT_FIELD = 'ebs_event_id';

/** Standard fields a mapping may name; any other key must be a custom field's 40-hex key. */
const STANDARD = {
  person: ['name', 'phone'],
  deal: ['title', 'value', 'expected_close_date'],
} as const;
const CUSTOM_KEY = /^[0-9a-f]{40}$/;

export const DEFAULT_PIPEDRIVE_MAPPING: PipedriveMapping = {
  currency: 'USD',
  leads: {
    // `name` unmapped: first and last name joined (else the email), as Pipedrive needs a name.
    person: { phone: 'phone' },
    deal: { title: 'subject', value: 'estimated_budget_cents', expected_close_date: 'event_date' },
    createDeal: true,
    onDelete: 'delete',
  },
  events: {
    // The start day where the business is (as Salesforce's CloseDate): starts_at is UTC, whose
    // day is the next one for an evening event in the Americas.
    deal: {
      title: 'title',
      value: 'starting_balance_cents',
      expected_close_date: 'starts_at_date',
    },
    status: { proposal: 'open', confirmed: 'won', completed: 'won', canceled: 'lost', '*': 'open' },
    onDelete: 'delete',
  },
};

const merge = fieldMapMerger((field, where) => {
  const standard: readonly string[] = STANDARD[where.endsWith('.person') ? 'person' : 'deal'];
  return standard.includes(field) || CUSTOM_KEY.test(field)
    ? undefined
    : `expected ${standard.join(', ')} or a custom field key (40 hex digits)`;
});

/**
 * The defaults with the configured overrides applied (EBSYNC_PIPEDRIVE_MAPPING, or crm.pipedrive.mapping in
 * the config file `file`, which refusals then name).
 */
export function pipedriveMapping(
  overrides: PipedriveMappingOverrides = {},
  file?: string,
): PipedriveMapping {
  return mappingWithOverrides(
    DEFAULT_PIPEDRIVE_MAPPING,
    overrides,
    merge,
    ['leads.person', 'leads.deal', 'events.deal'],
    mappingSource('pipedrive', file),
  );
}
