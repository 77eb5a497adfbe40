import { ymd } from '../../time.js';
import { CrmFakeState } from '../fake-state.js';
/**
 * The in-memory portal behind the HubSpot fake: CRM records, property definitions,
 * associations, rate-limit windows, counters, switches and a clock that tests can move.
 * Every behaviour cites the vendor page that documents it; nothing here is copied from
 * HubSpot's specs or code.
 */

export type ObjectType = 'contacts' | 'deals';
export const OBJECT_TYPES: readonly ObjectType[] = ['contacts', 'deals'];

export interface CrmObject {
  id: string;
  properties: Record<string, string | null>;
  createdAt: string;
  updatedAt: string;
  archived: boolean;
}

export interface PropertyDefinition {
  name: string;
  label: string;
  type: string;
  fieldType: string;
  groupName: string;
  hasUniqueValue: boolean;
  hubspotDefined: boolean;
}

/**
 * A portal admin's validation rule on one property: values longer than `maxLength`, or not
 * matching `pattern`, are refused.
 * https://knowledge.hubspot.com/properties/set-validation-rules-for-properties — admins set
 * rules on text properties, Deal Name among the default ones.
 * https://developers.hubspot.com/docs/api-reference/crm-property-validations-v3/guide — rule
 * types include MAX_LENGTH and REGEX; the fake keeps just these two, set by its admin route.
 * https://developers.hubspot.com/docs/api-reference/error-handling — from API version
 * 2026-09 the rules hold on every CRM API write.
 */
export interface ValidationRule {
  objectType: ObjectType;
  property: string;
  maxLength?: number;
  pattern?: string;
}

export interface HubSpotLimits {
  /** Requests per rolling ten seconds (private apps: 100 to 190 by tier). */
  tenSecondly: number;
  /** Requests per day (private apps: 250,000 up to 1,000,000 by tier). */
  daily: number;
}

export interface HubSpotCounters {
  /** Requests by `METHOD /path` (route pattern), rate-limited or not. */
  requests: Record<string, number>;
  /** 429 answers by policy name. */
  rateLimited: Record<string, number>;
  created: Record<ObjectType, number>;
  /** Existing records whose properties an upsert changed. */
  updated: Record<ObjectType, number>;
  /** Inputs received by batch upserts (what a second, unchanged mirror must not send). */
  upsertInputs: number;
  archived: number;
  associations: number;
  faults: number;
}

// https://developers.hubspot.com/docs/api/usage-details — private apps get 100 (Free and
// Starter) to 190 (Professional and Enterprise) requests per 10 seconds, and a daily
// allowance of 250,000 or more; these defaults are the Professional tier's.
export const DEFAULT_LIMITS: HubSpotLimits = { tenSecondly: 190, daily: 625_000 };
export const TEN_SECONDS_MS = 10_000;

// https://developers.hubspot.com/docs/api/crm/properties — every object has HubSpot-defined
// properties; a contact's email is unique per portal (it is what upsert by email matches).
const BUILT_IN: Record<ObjectType, readonly string[]> = {
  contacts: [
    'email',
    'firstname',
    'lastname',
    'phone',
    'company',
    'city',
    'state',
    'zip',
    'address',
    'website',
    'lifecyclestage',
    'hs_lead_status',
  ],
  deals: ['dealname', 'amount', 'dealstage', 'pipeline', 'closedate', 'description', 'dealtype'],
};

// https://developers.hubspot.com/docs/api/crm/properties — a property's `type` (string,
// number, date, datetime, bool, enumeration…) says what values it takes; the built-in ones
// not of type string. A deal's amount is a number and its close date a datetime.
const BUILT_IN_TYPES: Record<ObjectType, Readonly<Record<string, string>>> = {
  contacts: { lifecyclestage: 'enumeration', hs_lead_status: 'enumeration' },
  deals: {
    amount: 'number',
    closedate: 'datetime',
    dealstage: 'enumeration',
    pipeline: 'enumeration',
    dealtype: 'enumeration',
  },
};

// https://developers.hubspot.com/docs/api/crm/pipelines — the default deal pipeline
// ("default") and the internal ids of its stages.
export const DEFAULT_PIPELINE_STAGES: readonly string[] = [
  'appointmentscheduled',
  'qualifiedtobuy',
  'presentationscheduled',
  'decisionmakerboughtin',
  'contractsent',
  'closedwon',
  'closedlost',
];

const emptyCounters = (): HubSpotCounters => ({
  requests: {},
  rateLimited: {},
  created: { contacts: 0, deals: 0 },
  updated: { contacts: 0, deals: 0 },
  upsertInputs: 0,
  archived: 0,
  associations: 0,
  faults: 0,
});

export class HubSpotState extends CrmFakeState<HubSpotCounters> {
  readonly objects: Record<ObjectType, Map<string, CrmObject>> = {
    contacts: new Map(),
    deals: new Map(),
  };
  readonly properties: Record<ObjectType, Map<string, PropertyDefinition>> = {
    contacts: new Map(),
    deals: new Map(),
  };
  /** `dealId|contactId` pairs. */
  readonly dealContacts = new Set<string>();
  limits: HubSpotLimits = { ...DEFAULT_LIMITS };
  /** The next `count` requests are held `ms` before they are answered (a hung portal). */
  stall: { ms: number; count: number } | undefined;
  /** Rules the portal's admin set (an admin switch of the fake); none by default. */
  validationRules: ValidationRule[] = [];
  /**
   * Contacts one deal may be associated with; null: no limit short of HubSpot's own. HubSpot
   * caps associations per record (https://developers.hubspot.com/docs/api/crm/associations,
   * limits); tests set a small cap to make an association fail.
   */
  contactsPerDeal: number | null = null;
  /**
   * How an item error names its input: by the input's objectWriteTraceId where it has one
   * (HubSpot's documented way), by its id only, or not at all. A test switch: ebsync must
   * place or at least report each failed input whichever it gets.
   */
  itemErrorContext: 'trace' | 'ids' | 'none' = 'trace';
  /**
   * Records (by HubSpot id) a batch read answers with an error of another category than
   * OBJECT_NOT_FOUND instead of the record: HubSpot names its 207 errors by category, and one
   * that is not "not found" says nothing of whether the record is still there. A test switch,
   * set by `PUT /_admin/read-refusals`; named like any item error (see itemErrorContext).
   */
  readonly readRefused = new Map<string, { category: string; message: string }>();
  /**
   * The portal's time zone (IANA), answered by GET /account-info/v3/details, and the zone
   * whose midnight resets the daily limit, as HubSpot's does. Undefined: the route is not
   * served (404) and days are UTC days.
   */
  timeZone: string | undefined;
  /**
   * Whether the account-info read counts against the limits and is refused once the day's
   * allowance is spent. HubSpot's documentation does not say; a test switch for both cases.
   */
  accountInfoCounts = true;
  private nextId = 1001;
  /** End times of the calls counted in the rolling ten-second window. */
  private window: number[] = [];
  private day = '';
  private usedToday = 0;

  constructor(readonly token: string) {
    super(emptyCounters);
    this.reset();
  }

  override reset(): void {
    super.reset();
    for (const type of OBJECT_TYPES) {
      this.objects[type].clear();
      this.properties[type].clear();
      for (const name of BUILT_IN[type]) {
        this.properties[type].set(name, {
          name,
          label: name,
          type: BUILT_IN_TYPES[type][name] ?? 'string',
          fieldType: 'text',
          groupName: type === 'contacts' ? 'contactinformation' : 'dealinformation',
          hasUniqueValue: type === 'contacts' && name === 'email',
          hubspotDefined: true,
        });
      }
    }
    this.dealContacts.clear();
    this.limits = { ...DEFAULT_LIMITS };
    this.stall = undefined;
    this.validationRules = [];
    this.contactsPerDeal = null;
    this.itemErrorContext = 'trace';
    this.readRefused.clear();
    this.timeZone = undefined;
    this.accountInfoCounts = true;
    this.window = [];
    this.day = '';
    this.usedToday = 0;
  }

  newId(): string {
    return String(this.nextId++);
  }

  /**
   * Counts one call against both limits, or names the policy that turns it away.
   * https://developers.hubspot.com/docs/api/usage-details — the burst limit is a rolling
   * ten-second window; the daily one resets at midnight in the portal's time zone (UTC
   * days while the fake has none).
   */
  admit(): { policy: 'TEN_SECONDLY_ROLLING' | 'DAILY' | null; headers: Record<string, string> } {
    const now = this.now();
    const today = ymd(now, this.timeZone ?? 'UTC');
    if (today !== this.day) {
      this.day = today;
      this.usedToday = 0;
    }
    this.window = this.window.filter((t) => t > now - TEN_SECONDS_MS);
    let policy: 'TEN_SECONDLY_ROLLING' | 'DAILY' | null = null;
    if (this.usedToday >= this.limits.daily) policy = 'DAILY';
    else if (this.window.length >= this.limits.tenSecondly) policy = 'TEN_SECONDLY_ROLLING';
    else {
      this.window.push(now);
      this.usedToday += 1;
    }
    return {
      policy,
      headers: {
        'x-hubspot-ratelimit-max': String(this.limits.tenSecondly),
        'x-hubspot-ratelimit-remaining': String(
          Math.max(0, this.limits.tenSecondly - this.window.length),
        ),
        'x-hubspot-ratelimit-interval-milliseconds': String(TEN_SECONDS_MS),
        'x-hubspot-ratelimit-daily': String(this.limits.daily),
        'x-hubspot-ratelimit-daily-remaining': String(
          Math.max(0, this.limits.daily - this.usedToday),
        ),
        date: new Date(now).toUTCString(),
      },
    };
  }

  /** The live record whose unique property `name` holds `value`. */
  findBy(type: ObjectType, name: string, value: string): CrmObject | undefined {
    if (name === 'hs_object_id') {
      const found = this.objects[type].get(value);
      return found && !found.archived ? found : undefined;
    }
    const wanted = name === 'email' ? value.toLowerCase() : value;
    for (const object of this.objects[type].values()) {
      if (object.archived) continue;
      const held = object.properties[name];
      if ((name === 'email' ? held?.toLowerCase() : held) === wanted) return object;
    }
    return undefined;
  }

  isUnique(type: ObjectType, name: string): boolean {
    return name === 'hs_object_id' || this.properties[type].get(name)?.hasUniqueValue === true;
  }
}
