import { defineSignal } from '@temporalio/workflow';

/**
 * What the service said when it turned a connection's request away (429, or the 403
 * variant): sent by the worker that got it to the workflow whose activity it was, and to the
 * connection's workflow, which keeps the last one for `ebsync connections`.
 */
export interface RateLimitSignal {
  /** Epoch ms at the worker. */
  at: number;
  status: number | null;
  /** Retry-After as sent, in ms; null when the answer had none. */
  retryAfterMs: number | null;
  /** The operation refused, e.g. `leads.list`. */
  operation: string | null;
  /**
   * Refusals this signal stands for: a worker signals a workflow at most once a second and
   * counts the refusals in between into the next one. Absent means 1.
   */
  count?: number;
  /**
   * The worker that was refused has no EBS_RATE_LIMIT: the pace then sets no request rate,
   * and what the pass needs is the setting (absent from older workers: unknown).
   */
  unlimited?: boolean;
}

/** How far back the per-minute counts go. */
export const LIMIT_WINDOW_MS = 3_600_000;

/** Rate-limit refusals per minute: [minute start (epoch ms), count], oldest first. */
export type LimitMinutes = [number, number][];

/** Sent by a worker whose request the service refused, to the workflow whose activity it was. */
export const rateLimitedSignal = defineSignal<[RateLimitSignal]>('rateLimited');
