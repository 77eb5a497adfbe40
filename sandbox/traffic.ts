/**
 * What the admin API can turn on at run time (faults, a rate limit) and what it can read
 * back (counters). Kept in memory: a restart resets them, as a test expects.
 */
export interface FaultSettings {
  /** Fraction of API requests (0..1) answered with a server error. */
  errorRate: number;
  /** Statuses drawn from for those errors. */
  errorStatuses: number[];
  /** Added delay per API request, in milliseconds. */
  latencyMs: number;
  /** Fraction of API requests (0..1) whose connection is dropped without an answer. */
  dropRate: number;
}

export const NO_FAULTS: FaultSettings = {
  errorRate: 0,
  errorStatuses: [500, 502, 503],
  latencyMs: 0,
  dropRate: 0,
};

export interface RateLimitSettings {
  /** Requests per second per credential; 0 turns it off. */
  perSecond: number;
  mode: '429' | '403';
}

/** A fixed one-second window per credential: cheap, and easy to reason about in tests. */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();
  constructor(public settings: RateLimitSettings) {}

  /** Undefined when admitted; otherwise how many seconds to wait. */
  check(credential: string, nowMs: number): number | undefined {
    if (this.settings.perSecond <= 0) return undefined;
    const windowStart = Math.floor(nowMs / 1000) * 1000;
    const current = this.windows.get(credential);
    if (!current || current.start !== windowStart) {
      this.windows.set(credential, { start: windowStart, count: 1 });
      return undefined;
    }
    if (current.count < this.settings.perSecond) {
      current.count += 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((windowStart + 1000 - nowMs) / 1000));
  }
}

export class Counters {
  requests = new Map<string, number>();
  rateLimited = 0;
  faultsInjected = 0;
  tokenGrants = 0;
  tokenRefreshes = 0;
  refreshReuse = 0;
  grantsRevoked = 0;
  webhookDeliveries = 0;
  webhookAttempts = 0;
  webhookFailures = 0;

  countRequest(route: string, status: number): void {
    const key = `${route} ${status}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
  }

  snapshot() {
    const byRoute: Record<string, Record<string, number>> = {};
    for (const [key, n] of this.requests) {
      const space = key.lastIndexOf(' ');
      const route = key.slice(0, space);
      (byRoute[route] ??= {})[key.slice(space + 1)] = n;
    }
    return {
      requests: byRoute,
      rate_limited: this.rateLimited,
      faults_injected: this.faultsInjected,
      token_grants: this.tokenGrants,
      token_refreshes: this.tokenRefreshes,
      refresh_token_reuse: this.refreshReuse,
      grants_revoked: this.grantsRevoked,
      webhook_deliveries: this.webhookDeliveries,
      webhook_attempts: this.webhookAttempts,
      webhook_failures: this.webhookFailures,
    };
  }

  reset(): void {
    this.requests.clear();
    this.rateLimited = 0;
    this.faultsInjected = 0;
    this.tokenGrants = 0;
    this.tokenRefreshes = 0;
    this.refreshReuse = 0;
    this.grantsRevoked = 0;
    this.webhookDeliveries = 0;
    this.webhookAttempts = 0;
    this.webhookFailures = 0;
  }
}
