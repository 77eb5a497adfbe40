import { describe, expect, it } from 'vitest';
import { DEFAULT_HUBSPOT_MAPPING, hubspotMapping } from '../../destinations/hubspot-mapping.js';
import {
  DEFAULT_PIPEDRIVE_MAPPING,
  pipedriveMapping,
} from '../../destinations/pipedrive-mapping.js';
import {
  DEFAULT_SALESFORCE_MAPPING,
  salesforceMapping,
} from '../../destinations/salesforce-mapping.js';

/** The three CRM mappings: the defaults with the settings' overrides applied, one rule. */
describe('CRM mappings with overrides', () => {
  it('are the defaults when nothing is overridden', () => {
    expect(hubspotMapping()).toEqual(DEFAULT_HUBSPOT_MAPPING);
    expect(pipedriveMapping({})).toEqual(DEFAULT_PIPEDRIVE_MAPPING);
    expect(salesforceMapping({ leads: {}, events: {} })).toEqual(DEFAULT_SALESFORCE_MAPPING);
  });

  it('HubSpot: field maps merged (null drops a field), stages by key, single values replaced', () => {
    const m = hubspotMapping({
      pipeline: 'p2',
      leads: { contact: { phone: null, jobtitle: 'subject' }, dealStage: 'qualified' },
      events: { stages: { canceled: 'lost2' }, onDelete: 'keep' },
    });
    expect(m.pipeline).toBe('p2');
    expect(m.leads.contact).toEqual({
      email: 'email',
      firstname: 'first_name',
      lastname: 'last_name',
      company: 'company_name',
      jobtitle: 'subject',
    });
    expect(m.leads.deal).toEqual(DEFAULT_HUBSPOT_MAPPING.leads.deal);
    expect(m.leads.dealStage).toBe('qualified');
    expect(m.leads.onDelete).toBe('archive');
    expect(m.events.stages).toEqual({
      ...DEFAULT_HUBSPOT_MAPPING.events.stages,
      canceled: 'lost2',
    });
    expect(m.events.onDelete).toBe('keep');
    expect(() => hubspotMapping({ events: { deal: { dealstage: 'title' } } })).toThrow(
      'EBSYNC_HUBSPOT_MAPPING events.deal.dealstage is not allowed: ebsync sets',
    );
    expect(() => hubspotMapping({ leads: { deal: { amount: 'nope' } } })).toThrow(
      "EBSYNC_HUBSPOT_MAPPING leads.deal.amount='nope' is not allowed: expected a column of leads",
    );
  });

  it('Pipedrive: person and deal fields, the boolean, status by key', () => {
    const m = pipedriveMapping({
      currency: 'EUR',
      leads: { person: { phone: null }, createDeal: false },
      events: { deal: { value: null }, status: { '*': 'lost' } },
    });
    expect(m.currency).toBe('EUR');
    expect(m.leads.person).toEqual({});
    expect(m.leads.createDeal).toBe(false);
    expect(m.events.deal).toEqual({ title: 'title', expected_close_date: 'starts_at_date' });
    expect(m.events.status).toEqual({ ...DEFAULT_PIPEDRIVE_MAPPING.events.status, '*': 'lost' });
    expect(() => pipedriveMapping({ leads: { person: { email: 'email' } } })).toThrow(
      'EBSYNC_PIPEDRIVE_MAPPING leads.person.email is not allowed: expected name, phone or a custom field key',
    );
  });

  it('Salesforce: lead and opportunity fields, stages and the contact role', () => {
    const m = salesforceMapping({
      leads: { lead: { Description: null }, onDelete: 'keep' },
      events: { opportunity: { Name: 'title' }, contactRole: 'Buyer' },
    });
    const lead: Record<string, string> = { ...DEFAULT_SALESFORCE_MAPPING.leads.lead };
    delete lead['Description'];
    expect(m.leads.lead).toEqual(lead);
    expect(m.leads.onDelete).toBe('keep');
    expect(m.events.opportunity).toEqual(DEFAULT_SALESFORCE_MAPPING.events.opportunity);
    expect(m.events.stages).toEqual(DEFAULT_SALESFORCE_MAPPING.events.stages);
    expect(m.events.contactRole).toBe('Buyer');
    expect(() => salesforceMapping({ events: { opportunity: { StageName: 'title' } } })).toThrow(
      'EBSYNC_SALESFORCE_MAPPING events.opportunity.StageName is not allowed',
    );
  });
});
