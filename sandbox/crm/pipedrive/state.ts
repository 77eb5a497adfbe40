import { CrmFakeState } from '../fake-state.js';
import { createHash } from 'node:crypto';

/**
 * The in-memory company behind the Pipedrive fake: persons, deals, custom field
 * definitions, the 2-second rate window, the daily POST/PUT allowance, counters, switches
 * and a movable clock. Each behaviour cites the Pipedrive page that documents it; nothing
 * is copied from Pipedrive's specs or code.
 */

export type PipedriveEntity = 'persons' | 'deals';
export const PIPEDRIVE_ENTITIES: readonly PipedriveEntity[] = ['persons', 'deals'];

export interface PipedriveRecord {
  id: number;
  /** Persons: `name`, `emails`, `phones`; deals: `title`, `value`, `currency`, `status`, `person_id`… */
  fields: Record<string, unknown>;
  /** Keyed by the field's 40-character hash. */
  custom_fields: Record<string, string | null>;
  add_time: string;
  update_time: string;
  is_deleted: boolean;
}

export interface FieldDefinition {
  id: number;
  key: string;
  name: string;
  field_type: string;
  edit_flag: boolean;
}

export interface PipedriveLimits {
  /** Requests per 2-second window for one api_token. */
  perWindow: number;
  /** POST/PUT/PATCH requests per UTC day (`x-daily-requests-left`). */
  dailyWrites: number;
}

export interface PipedriveCounters {
  requests: Record<string, number>;
  /** 429 answers: `window` (2-second limit) or `daily`. */
  rateLimited: Record<string, number>;
  created: Record<PipedriveEntity, number>;
  /** PATCHes that changed something. */
  updated: Record<PipedriveEntity, number>;
  /** Every POST or PATCH of a person or deal (what an unchanged second mirror must not send). */
  writes: number;
  deleted: number;
  searches: number;
  faults: number;
}

// https://pipedrive.readme.io/docs/core-api-concepts-rate-limiting — api_token requests are
// limited per 2-second window by plan (Essential 20, Advanced 40, Professional 80, Power
// 100, Enterprise 120); POST/PUT requests are also limited per UTC day (the fair-usage
// allowance of 10,000, shown in x-daily-requests-left). Defaults: Professional.
export const DEFAULT_PIPEDRIVE_LIMITS: PipedriveLimits = { perWindow: 80, dailyWrites: 10_000 };
export const PIPEDRIVE_WINDOW_MS = 2_000;

const emptyCounters = (): PipedriveCounters => ({
  requests: {},
  rateLimited: {},
  created: { persons: 0, deals: 0 },
  updated: { persons: 0, deals: 0 },
  writes: 0,
  deleted: 0,
  searches: 0,
  faults: 0,
});

export type Admission = { refused: 'window' | 'daily' | null; headers: Record<string, string> };

export class PipedriveState extends CrmFakeState<PipedriveCounters> {
  readonly records: Record<PipedriveEntity, Map<number, PipedriveRecord>> = {
    persons: new Map(),
    deals: new Map(),
  };
  readonly fields: Record<PipedriveEntity, Map<string, FieldDefinition>> = {
    persons: new Map(),
    deals: new Map(),
  };
  limits: PipedriveLimits = { ...DEFAULT_PIPEDRIVE_LIMITS };
  private nextId = 1;
  private nextFieldId = 9001;
  private windowStart = 0;
  private inWindow = 0;
  private day = '';
  private writesToday = 0;

  constructor(readonly token: string) {
    super(emptyCounters);
    this.reset();
  }

  override reset(): void {
    super.reset();
    for (const entity of PIPEDRIVE_ENTITIES) {
      this.records[entity].clear();
      this.fields[entity].clear();
    }
    this.limits = { ...DEFAULT_PIPEDRIVE_LIMITS };
    this.windowStart = 0;
    this.inWindow = 0;
    this.day = '';
    this.writesToday = 0;
  }

  newId(): number {
    return this.nextId++;
  }

  // https://pipedrive.readme.io/docs/core-api-concepts-custom-fields — a custom field is
  // addressed by its key, a 40-character hash made when the field is created.
  addField(entity: PipedriveEntity, name: string, fieldType: string): FieldDefinition {
    const key = createHash('sha1').update(`${entity}:${name}:${this.nextFieldId}`).digest('hex');
    const def = { id: this.nextFieldId++, key, name, field_type: fieldType, edit_flag: true };
    this.fields[entity].set(key, def);
    return def;
  }

  /**
   * Counts one call, or says why it is turned away (the window is fixed at 2 s from its first
   * call; `x-ratelimit-reset` is the seconds until it ends).
   */
  admit(isWrite: boolean): Admission {
    const now = this.now();
    const today = new Date(now).toISOString().slice(0, 10);
    if (today !== this.day) {
      this.day = today;
      this.writesToday = 0;
    }
    if (now - this.windowStart >= PIPEDRIVE_WINDOW_MS) {
      this.windowStart = now;
      this.inWindow = 0;
    }
    let refused: Admission['refused'] = null;
    if (this.inWindow >= this.limits.perWindow) refused = 'window';
    else if (isWrite && this.writesToday >= this.limits.dailyWrites) refused = 'daily';
    else {
      this.inWindow += 1;
      if (isWrite) this.writesToday += 1;
    }
    const resetS = Math.max(1, Math.ceil((this.windowStart + PIPEDRIVE_WINDOW_MS - now) / 1000));
    return {
      refused,
      headers: {
        'x-ratelimit-limit': String(this.limits.perWindow),
        'x-ratelimit-remaining': String(Math.max(0, this.limits.perWindow - this.inWindow)),
        'x-ratelimit-reset': String(resetS),
        'x-daily-requests-left': String(Math.max(0, this.limits.dailyWrites - this.writesToday)),
        date: new Date(now).toUTCString(),
      },
    };
  }

  live(entity: PipedriveEntity): PipedriveRecord[] {
    return [...this.records[entity].values()].filter((r) => !r.is_deleted);
  }
}
