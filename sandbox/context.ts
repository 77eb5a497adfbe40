import type { Db, Records } from './db.js';
import type { Clock } from './clock.js';
import type { Counters, FaultSettings, RateLimiter } from './traffic.js';
import type { Caller } from './auth.js';
import type { RouteId } from '../api/routes.js';

/** Page sizes and reach of list answers. */
export interface PagingLimits {
  /** Largest page the service grants; larger requests are clamped and say so in meta.per_page. */
  maxPer: number;
  /** Results past this position are never returned, whatever the page. */
  reachLimit: number;
}

/** Everything a resource module needs, handed to it rather than imported. */
export interface SandboxContext {
  db: Db;
  records: Records;
  clock: Clock;
  limits: PagingLimits;
  counters: Counters;
  rateLimiter: RateLimiter;
  faults: FaultSettings;
  /** Access-token lifetime handed out by the OAuth server. */
  accessTokenTtlSeconds: number;
}

export interface HandlerInput {
  ctx: SandboxContext;
  caller: Caller;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
}

/** Returns the JSON body of a 200 response, or throws an ApiError. */
export type Handler = (input: HandlerInput) => unknown;

export type Handlers = Partial<Record<RouteId, Handler>>;
