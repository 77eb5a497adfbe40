import { CrmFakeState } from '../fake-state.js';
import { createHmac, randomBytes, type KeyObject } from 'node:crypto';

/**
 * The in-memory org behind the Salesforce fake: Leads, Contacts, Opportunities and
 * OpportunityContactRoles, the fields each object has (with the external ids ebsync upserts
 * by), the connected app and its sessions, the org's rolling 24-hour API allocation, counters,
 * switches and a movable clock. Each behaviour cites the Salesforce page that documents it;
 * nothing is copied from Salesforce's text or code.
 */

export type SObjectName = 'Lead' | 'Contact' | 'Opportunity' | 'OpportunityContactRole';
export const SOBJECTS: readonly SObjectName[] = [
  'Lead',
  'Contact',
  'Opportunity',
  'OpportunityContactRole',
];

export interface SObjectRecord {
  Id: string;
  type: SObjectName;
  fields: Record<string, unknown>;
  CreatedDate: string;
  LastModifiedDate: string;
  /** In the Recycle Bin (deleted records stay there 15 days). */
  IsDeleted: boolean;
}

export interface FieldDescription {
  name: string;
  type:
    | 'id'
    | 'string'
    | 'email'
    | 'phone'
    | 'currency'
    | 'date'
    | 'boolean'
    | 'textarea'
    | 'reference'
    | 'picklist';
  externalId: boolean;
  unique: boolean;
  /** Must be set when a record is created (nillable false, no default). */
  required: boolean;
  custom: boolean;
  /** Most characters a text field takes (0 for other types). */
  length: number;
}

export interface SalesforceLimits {
  /** Total API requests of the org per rolling 24 hours (`Sforce-Limit-Info` max). */
  dailyApiRequests: number;
}

export interface SalesforceCounters {
  requests: Record<string, number>;
  /** 403 REQUEST_LIMIT_EXCEEDED answers (key `daily`, the name the bench sums over). */
  rateLimited: Record<string, number>;
  created: Record<SObjectName, number>;
  /** Upserted records whose fields changed. */
  updated: Record<SObjectName, number>;
  /** Records sent to an upsert or create (what an unchanged second mirror must not send). */
  writes: number;
  deleted: number;
  /** Items refused with an error (by errorCode). */
  itemErrors: Record<string, number>;
  tokens: number;
  faults: number;
}

// https://developer.salesforce.com/docs/atlas.en-us.salesforce_app_limits_cheatsheet.meta/salesforce_app_limits_cheatsheet/salesforce_app_limits_platform_api.htm
// — total API requests per rolling 24 hours by edition; a Developer Edition org gets 15,000,
// the org a person trying ebsync most likely has.
export const DEFAULT_SALESFORCE_LIMITS: SalesforceLimits = { dailyApiRequests: 15_000 };
export const SALESFORCE_DAY_MS = 24 * 60 * 60 * 1000;
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm — a
// query answers at most a batch of records (2,000 by default) with `done` false and a
// `nextRecordsUrl` that the next batch is read from.
export const QUERY_BATCH = 2000;
/** The oldest API version the fake (and ebsync) speaks; older paths answer 404. */
export const MIN_API_VERSION = 62;

const f = (
  name: string,
  type: FieldDescription['type'],
  extra: Partial<FieldDescription> = {},
): FieldDescription => ({
  name,
  type,
  externalId: false,
  unique: false,
  required: false,
  custom: name.endsWith('__c'),
  length: 0,
  ...extra,
});
/** A text field of at most `length` characters. */
const text = (
  name: string,
  length: number,
  type: 'string' | 'email' | 'phone' | 'textarea' = 'string',
  extra: Partial<FieldDescription> = {},
): FieldDescription => f(name, type, { length, ...extra });
const externalId = (name: string): FieldDescription =>
  text(name, 255, 'string', { externalId: true, unique: true });

/**
 * The fields each object starts with: a few standard ones, and the custom external-id
 * fields docs/crm.md asks an admin to create.
 * https://developer.salesforce.com/docs/atlas.en-us.object_reference.meta/object_reference/sforce_api_objects_lead.htm
 * — LastName and Company are required on a Lead; Opportunity needs Name, StageName and
 * CloseDate; Contact needs LastName; an OpportunityContactRole links an OpportunityId and a
 * ContactId. Text lengths are the standard fields' (FirstName 40, LastName 80, Company 255…).
 */
function standardFields(): Record<SObjectName, Map<string, FieldDescription>> {
  const map = (list: FieldDescription[]) => new Map(list.map((d) => [d.name, d]));
  return {
    Lead: map([
      f('Id', 'id'),
      text('FirstName', 40),
      text('LastName', 80, 'string', { required: true }),
      text('Company', 255, 'string', { required: true }),
      text('Email', 80, 'email'),
      text('Phone', 40, 'phone'),
      text('Title', 128),
      f('LeadSource', 'picklist'),
      f('Status', 'picklist'),
      text('Description', 32_000, 'textarea'),
      externalId('EBS_Lead_Id__c'),
    ]),
    Contact: map([
      f('Id', 'id'),
      text('FirstName', 40),
      text('LastName', 80, 'string', { required: true }),
      text('Email', 80, 'email'),
      text('Phone', 40, 'phone'),
      externalId('EBS_Email__c'),
    ]),
    Opportunity: map([
      f('Id', 'id'),
      text('Name', 120, 'string', { required: true }),
      f('StageName', 'picklist', { required: true }),
      f('CloseDate', 'date', { required: true }),
      f('Amount', 'currency'),
      text('Description', 32_000, 'textarea'),
      f('LeadSource', 'picklist'),
      externalId('EBS_Event_Id__c'),
    ]),
    OpportunityContactRole: map([
      f('Id', 'id'),
      f('OpportunityId', 'reference', { required: true }),
      f('ContactId', 'reference', { required: true }),
      f('Role', 'picklist'),
      f('IsPrimary', 'boolean'),
    ]),
  };
}

// https://help.salesforce.com/s/articleView?id=sf.salesforce_ids.htm — record ids carry a
// three-character key prefix per object (00Q Lead, 003 Contact, 006 Opportunity, 00K role).
const PREFIX: Record<SObjectName, string> = {
  Lead: '00Q',
  Contact: '003',
  Opportunity: '006',
  OpportunityContactRole: '00K',
};

const emptyCounters = (): SalesforceCounters => ({
  requests: {},
  rateLimited: {},
  created: { Lead: 0, Contact: 0, Opportunity: 0, OpportunityContactRole: 0 },
  updated: { Lead: 0, Contact: 0, Opportunity: 0, OpportunityContactRole: 0 },
  writes: 0,
  deleted: 0,
  itemErrors: {},
  tokens: 0,
  faults: 0,
});

export interface ConnectedApp {
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  /** The pre-authorized user the JWT bearer flow may act as. */
  username: string;
  /** The certificate uploaded to the app: verifies JWT bearer assertions. */
  certificate: KeyObject;
}

export class SalesforceState extends CrmFakeState<SalesforceCounters> {
  readonly records: Record<SObjectName, Map<string, SObjectRecord>> = {
    Lead: new Map(),
    Contact: new Map(),
    Opportunity: new Map(),
    OpportunityContactRole: new Map(),
  };
  fields = standardFields();
  limits: SalesforceLimits = { ...DEFAULT_SALESFORCE_LIMITS };
  /**
   * An active duplicate rule that blocks a new Lead whose Email another Lead has. Off by
   * default: the org's standard rules only alert, and an alert does not stop an API save.
   */
  blockDuplicateLeadEmails = false;
  /**
   * Ids of records an Apex before-delete trigger refuses (`addError`): deleting one fails
   * that item with FIELD_CUSTOM_VALIDATION_EXCEPTION and the trigger's message, as such an
   * org answers; the other records of the call are deleted.
   */
  readonly deleteRefused = new Set<string>();
  /**
   * Ids of records someone else deletes between ebsync's read and its delete (tests set it):
   * a delete of one moves it to the Recycle Bin first, so its item answers ENTITY_IS_DELETED,
   * as Salesforce answers for a record already there.
   */
  readonly deletedMeanwhile = new Set<string>();
  /**
   * The connected app's "refresh token rotation": each refresh answers a new refresh token
   * and the one presented stops working.
   */
  rotateRefreshTokens = false;
  /** Records a query answers at once (Salesforce's default batch, QUERY_BATCH; tests lower it). */
  queryBatchSize = QUERY_BATCH;
  /** Access tokens issued and still valid. */
  readonly sessions = new Set<string>();
  /** Arrival times of the API calls counted against the org's allocation. */
  private calls: number[] = [];
  private nextId = 1;

  constructor(readonly app: ConnectedApp) {
    super(emptyCounters);
    this.reset();
  }

  override reset(): void {
    super.reset();
    for (const type of SOBJECTS) this.records[type].clear();
    this.fields = standardFields();
    this.limits = { ...DEFAULT_SALESFORCE_LIMITS };
    this.blockDuplicateLeadEmails = false;
    this.deleteRefused.clear();
    this.deletedMeanwhile.clear();
    this.rotateRefreshTokens = false;
    this.queryBatchSize = QUERY_BATCH;
    this.sessions.clear();
    this.calls = [];
  }

  newId(type: SObjectName): string {
    const n = (this.nextId++).toString(36).toUpperCase().padStart(9, '0');
    return `${PREFIX[type]}Dn000${n}AAA`.slice(0, 18);
  }

  issueSession(): { token: string; issuedAt: string; signature: string; id: string } {
    const token = `00Dfake!${randomBytes(24).toString('base64url')}`;
    this.sessions.add(token);
    this.counters.tokens += 1;
    const issuedAt = String(this.now());
    const id = `/id/00Dfake000000001/005fake000000001`;
    // https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_refresh_token_flow.htm
    // — the signature is an HMAC-SHA256 of id and issued_at keyed by the consumer secret.
    const signature = createHmac('sha256', this.app.clientSecret)
      .update(id + issuedAt)
      .digest('base64');
    return { token, issuedAt, signature, id };
  }

  /** Drops the org's rolling window to the last 24 hours and returns the count in it. */
  usage(): number {
    const since = this.now() - SALESFORCE_DAY_MS;
    if (this.calls.length > 0 && (this.calls[0] ?? 0) <= since) {
      this.calls = this.calls.filter((t) => t > since);
    }
    return this.calls.length;
  }

  /** Counts one API call, or false when the org's allocation is spent. */
  admit(): boolean {
    if (this.usage() >= this.limits.dailyApiRequests) return false;
    this.calls.push(this.now());
    return true;
  }

  live(type: SObjectName): SObjectRecord[] {
    return [...this.records[type].values()].filter((r) => !r.IsDeleted);
  }

  /** Live records whose field holds the value (external ids match case-insensitively). */
  byField(type: SObjectName, field: string, value: string): SObjectRecord[] {
    const wanted = value.toLowerCase();
    return this.live(type).filter((r) => {
      const v = r.fields[field];
      return typeof v === 'string' && v.toLowerCase() === wanted;
    });
  }

  /** A record made outside the API (a test's, or a person's in the Salesforce UI). */
  insert(type: SObjectName, fields: Record<string, unknown>): SObjectRecord {
    const at = new Date(this.now()).toISOString();
    const record: SObjectRecord = {
      Id: this.newId(type),
      type,
      fields,
      CreatedDate: at,
      LastModifiedDate: at,
      IsDeleted: false,
    };
    this.records[type].set(record.Id, record);
    return record;
  }
}
