import type { Db, Records } from './db.js';
import type { Clock } from './clock.js';
import type { PagingLimits } from './envelope.js';
import type { Counters, FaultSettings, RateLimiter } from './traffic.js';
import type { Caller } from './auth.js';
import type { RouteId } from '../api/routes.js';

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
