/** What every CRM fake counts: calls by route, 429s by policy, injected faults answered. */
export interface CrmCounters {
  requests: Record<string, number>;
  rateLimited: Record<string, number>;
  faults: number;
}

/**
 * The state every CRM fake keeps besides its records: counters, the injected-fault switch and
 * a clock tests can move (an offset added to the real one, so a daily reset passes without
 * waiting). Each fake extends it with its vendor's records and limits; its reset() clears
 * those and calls this one.
 */
export abstract class CrmFakeState<C extends CrmCounters> {
  counters: C;
  /** Added to the real clock. */
  clockOffsetMs = 0;
  /**
   * The next `count` requests (of `route` only, when given: `POST /api/v2/:entity`) answer
   * `status` (a 502 outage, say) before any other check.
   */
  fault: { status: number; count: number; route?: string | undefined } | undefined;

  constructor(private readonly emptyCounters: () => C) {
    this.counters = emptyCounters();
  }

  now(): number {
    return Date.now() + this.clockOffsetMs;
  }

  reset(): void {
    this.counters = this.emptyCounters();
    this.clockOffsetMs = 0;
    this.fault = undefined;
  }

  /** One request turned away by the named limit. */
  countRateLimited(policy: string): void {
    this.counters.rateLimited[policy] = (this.counters.rateLimited[policy] ?? 0) + 1;
  }
}
