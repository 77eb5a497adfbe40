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
 */
export class Pace {
  private cutAt = Number.NEGATIVE_INFINITY;
  private steppedAt = Number.NEGATIVE_INFINITY;
  private holdUntil = Number.NEGATIVE_INFINITY;
  private refusedAt = Number.NEGATIVE_INFINITY;
  last: RateLimitSignal | null = null;

  private weight = 1;
  constructor(
    private readonly connectionId: string,
    private readonly options: { cutOnRepeat?: boolean } = {},
  ) {}

  onLimit(signal: RateLimitSignal, now: number): void {
    this.last = signal;
    const repeat = (signal.count ?? 1) > 1 || now - this.refusedAt < REPEAT_WINDOW_MS;
    this.refusedAt = now;
    if (this.options.cutOnRepeat === true && !repeat) return;
    if (now >= this.holdUntil) {
      this.weight = Math.max(MIN_PACE, this.weight / 2);
      this.cutAt = now;
      this.holdUntil = now + Math.max(1_000, signal.retryAfterMs ?? 0);
    }
  }

  /** The steps back up due by `now`, from the last one (none while cut or at full pace). */
  private recovery(now: number): { steps: number; from: number } {
    if (this.weight >= 1 || now - this.cutAt < RECOVERY_QUIET_MS) return { steps: 0, from: now };
    const from = Math.max(this.steppedAt, this.cutAt + RECOVERY_QUIET_MS - RECOVERY_STEP_MS);
    return { steps: Math.floor((now - from) / RECOVERY_STEP_MS), from };
  }

  /** The current share; climbs back towards 1 once the service has been quiet a while. */
  share(now: number): number {
    const { steps, from } = this.recovery(now);
    if (steps > 0) {
      this.weight = Math.min(1, this.weight * RECOVERY_FACTOR ** steps);
      this.steppedAt = from + steps * RECOVERY_STEP_MS;
    }
    return this.weight;
  }

  /** The share `share(now)` would give, for a query: a query handler must not move state. */
  peek(now: number): number {
    const { steps } = this.recovery(now);
    return steps > 0 ? Math.min(1, this.weight * RECOVERY_FACTOR ** steps) : this.weight;
  }

  /** Activity priority: the connection is the fairness key, its pace the weight. */
  priority(now: number): Priority {
    return { fairnessKey: this.connectionId, fairnessWeight: this.share(now) };
  }
}
