import type { Priority } from '@temporalio/common';
import { LIMIT_WINDOW_MS, type LimitMinutes, type RateLimitSignal } from './rate-limit-types.js';

const MINUTE_MS = 60_000;

/** `minutes` with the signal counted in its minute, and minutes older than an hour dropped. */
export function countLimit(
  minutes: readonly [number, number][],
  signal: RateLimitSignal,
): LimitMinutes {
  const minute = Math.floor(signal.at / MINUTE_MS) * MINUTE_MS;
  const add = Math.max(1, signal.count ?? 1);
  const kept: LimitMinutes = minutes
    .filter(([start]) => start > signal.at - LIMIT_WINDOW_MS)
    .map(([start, n]) => [start, n]);
  const same = kept.find(([start]) => start === minute);
  if (same) same[1] += add;
  else kept.push([minute, add]);
  return kept.sort((a, b) => a[0] - b[0]);
}

/** Slowest share of its rate a connection is cut to, however often it is turned away. */
export const MIN_PACE = 1 / 16;
/** Quiet time after a limit signal before the pace starts climbing back. */
export const RECOVERY_QUIET_MS = 10_000;
/**
 * A refusal within this long of the previous one is a repeat: the rate is too high, and the
 * pace is cut. A lone refusal only holds the connection's requests for its Retry-After.
 */
export const REPEAT_WINDOW_MS = 30_000;
/** Each step back up multiplies the pace by this, once per RECOVERY_STEP_MS of quiet. */
const RECOVERY_FACTOR = 1.25;
const RECOVERY_STEP_MS = 2_000;
/**
 * With `learnCeiling`: the quick climb stops at this share of the pace the service last turned
 * away repeatedly, and each step above it multiplies the pace by PROBE_FACTOR only.
 */
export const CEILING_MARGIN = 0.9;
const PROBE_FACTOR = 1.03;

/** A time before any: finite, so that a carried pace survives JSON (-Infinity would not). */
const NEVER = -Number.MAX_SAFE_INTEGER;

/** What a pace knows, carried by a pass that continues as new (times in workflow time). */
export interface PaceState {
  weight: number;
  ceiling: number;
  cutAt: number;
  steppedAt: number;
  holdUntil: number;
  refusedAt: number;
}

/**
 * The share of its rate a connection's service calls run at, in workflow state (DESIGN
 * decision 7). The task queue limits each fairness key to `rate × weight`, so halving the
 * weight halves the connection's rate on every worker at once. Signals that arrive together
 * (the same second's refusals) count as one: a cut waits for the previous cut's Retry-After.
 *
 * With `cutOnRepeat`, a lone refusal does not cut: requests are spaced below the rate in the
 * shared store, so one refusal in a while is a request that arrived late into a full window of
 * the service, and the Retry-After hold on every worker (activities/request-pacing.ts) answers
 * it. Halving the pace for it cost a pass about a fifth of its rate (the `rate` bench before
 * this change; its recorded run is of the code after it).
 * A refusal within REPEAT_WINDOW_MS of another, or a signal counting several, means the rate
 * is set too high, and halves the pace as before.
 *
 * With `learnCeiling`, a cut also remembers the pace the service turned away (its ceiling):
 * the service's numeric limits are not published, so EBS_RATE_LIMIT is often a guess above
 * them. Climbing back to the full rate each time met the same refusals again, and a pass ran
 * a sawtooth between the limit and half of it. Now the climb is quick up to CEILING_MARGIN of
 * the ceiling and slow (PROBE_FACTOR a step) above it, and a refusal met in that slow probe,
 * once climbing again after the last cut, cuts to CEILING_MARGIN of the pace refused rather
 * than half: the pace settles just under the service's limit and still finds a limit that was
 * raised. A pass that continues as new carries its pace (`state()`), instead of starting at
 * the full rate into the same refusals.
 */
export class Pace {
  private cutAt = NEVER;
  private steppedAt = NEVER;
  private holdUntil = NEVER;
  private refusedAt = NEVER;
  last: RateLimitSignal | null = null;

  private weight = 1;
  /** The pace the service last turned away repeatedly (1: never, or not learned). */
  private ceiling = 1;
  constructor(
    private readonly connectionId: string,
    private readonly options: { cutOnRepeat?: boolean; learnCeiling?: boolean } = {},
    carried?: PaceState,
  ) {
    if (carried) {
      this.weight = carried.weight;
      this.ceiling = carried.ceiling;
      this.cutAt = carried.cutAt;
      this.steppedAt = carried.steppedAt;
      this.holdUntil = carried.holdUntil;
      this.refusedAt = carried.refusedAt;
    }
  }

  onLimit(signal: RateLimitSignal, now: number): void {
    this.last = signal;
    const repeat = (signal.count ?? 1) > 1 || now - this.refusedAt < REPEAT_WINDOW_MS;
    this.refusedAt = now;
    if (this.options.cutOnRepeat === true && !repeat) return;
    if (now >= this.holdUntil) {
      const learn = this.options.learnCeiling === true;
      // Passes from before the ceiling cut the weight they last stepped to, as they ran.
      const refused = learn ? this.share(now) : this.weight;
      // Refused while probing slowly above the last ceiling, once climbing again after the
      // last cut: the limit is just under this pace, and a cut to the margin below it keeps
      // the pass near it. Refused again before climbing (a limit that dropped), or below the
      // probing range: halved, as ever.
      const probing =
        learn &&
        refused >= this.ceiling * CEILING_MARGIN &&
        now - this.cutAt > RECOVERY_QUIET_MS &&
        this.cutAt !== NEVER;
      if (learn) this.ceiling = refused;
      this.weight = Math.max(MIN_PACE, probing ? refused * CEILING_MARGIN : refused / 2);
      this.cutAt = now;
      this.steppedAt = NEVER;
      this.holdUntil = now + Math.max(1_000, signal.retryAfterMs ?? 0);
    }
  }

  /**
   * The weight after the steps back up due by `now`, and when the last of them was (none
   * while cut or at full pace).
   */
  private recovered(now: number): { weight: number; steppedAt: number } {
    const unchanged = { weight: this.weight, steppedAt: this.steppedAt };
    if (this.weight >= 1 || now - this.cutAt < RECOVERY_QUIET_MS) return unchanged;
    const from = Math.max(this.steppedAt, this.cutAt + RECOVERY_QUIET_MS - RECOVERY_STEP_MS);
    const steps = Math.floor((now - from) / RECOVERY_STEP_MS);
    if (steps <= 0) return unchanged;
    const steppedAt = from + steps * RECOVERY_STEP_MS;
    if (this.options.learnCeiling !== true) {
      return { weight: Math.min(1, this.weight * RECOVERY_FACTOR ** steps), steppedAt };
    }
    const quickUpTo = this.ceiling * CEILING_MARGIN;
    let weight = this.weight;
    // At most a few hundred steps: each multiplies by PROBE_FACTOR or more, from MIN_PACE up.
    for (let step = 0; step < steps && weight < 1; step += 1) {
      weight =
        weight < quickUpTo
          ? Math.min(quickUpTo, weight * RECOVERY_FACTOR)
          : Math.min(1, weight * PROBE_FACTOR);
    }
    return { weight, steppedAt };
  }

  /** The current share; climbs back towards 1 once the service has been quiet a while. */
  share(now: number): number {
    const { weight, steppedAt } = this.recovered(now);
    this.weight = weight;
    this.steppedAt = steppedAt;
    return this.weight;
  }

  /** The share `share(now)` would give, for a query: a query handler must not move state. */
  peek(now: number): number {
    return this.recovered(now).weight;
  }

  /** What a pass that continues as new carries into its next run. */
  state(): PaceState {
    return {
      weight: this.weight,
      ceiling: this.ceiling,
      cutAt: this.cutAt,
      steppedAt: this.steppedAt,
      holdUntil: this.holdUntil,
      refusedAt: this.refusedAt,
    };
  }

  /** Activity priority: the connection is the fairness key, its pace the weight. */
  priority(now: number): Priority {
    return { fairnessKey: this.connectionId, fairnessWeight: this.share(now) };
  }
}
