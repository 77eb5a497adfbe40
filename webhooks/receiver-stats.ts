import { z } from 'zod';
import type { SpoolState } from './spooled-store.js';

/** Upper bounds (ms) of the latency histogram's buckets; a last one holds everything slower. */
export const LATENCY_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000];
const MINUTE_MS = 60_000;
const KEPT_MINUTES = 60;
/** 503s this recent make a problem of the status: the store, or this process, is failing now. */
export const RECENT_FAILURE_MINUTES = 15;

export const receiverStatsSchema = z.object({
  since: z.number(),
  now: z.number(),
  /** Deliveries answered 2xx (stored in the inbox, repeats of stored ones, or ignored as not for ebsync). */
  delivered: z.number().int().nonnegative(),
  /** Answered 4xx: bad signature, unknown connection, malformed, too large. */
  rejected: z.number().int().nonnegative(),
  /** Answered 503: the notice could not be stored; the sender retries. */
  failed: z.number().int().nonnegative(),
  /** Counts per bucket of LATENCY_BOUNDS_MS, then one for anything slower. */
  latencyBuckets: z.array(z.number().int().nonnegative()),
  latencyBoundsMs: z.array(z.number()),
  /** The last hour by minute, oldest first: [minute start, delivered, rejected, mean latency ms]. */
  minutes: z.array(z.tuple([z.number(), z.number(), z.number(), z.number().nullable()])),
  /** Answered 503 in the last RECENT_FAILURE_MINUTES (absent from a receiver before it). */
  failedRecently: z.number().int().nonnegative().optional(),
  /** Epoch ms of the last 503; null before any. */
  lastFailedAt: z.number().nullable().optional(),
  /**
   * Deliveries to a registered connection refused in the last RECENT_FAILURE_MINUTES for a
   * signature its secret does not verify, by connection, with when the last came (absent from
   * a receiver before it).
   */
  /**
   * The receiver's spool (webhooks/spooled-store.ts): notices kept while the store could not
   * take them, and when the oldest held now was kept (absent from a receiver before it).
   */
  spool: z
    .object({
      held: z.number().int().nonnegative(),
      oldestAt: z.number().nullable(),
      keptSinceStart: z.number().int().nonnegative(),
    })
    .optional(),
  signatureRefused: z
    .array(
      z.object({
        connectionId: z.string(),
        count: z.number().int(),
        lastAt: z.number(),
        /** The last delivery to it whose signature verified (epoch ms); null: none since start. */
        lastVerifiedAt: z.number().nullable().default(null),
      }),
    )
    .optional(),
});
export type ReceiverStats = z.infer<typeof receiverStatsSchema>;

interface Minute {
  start: number;
  delivered: number;
  rejected: number;
  failed: number;
  latencySum: number;
  /** Signatures refused for a registered connection, by connection. */
  signatureRefused?: Map<string, number>;
}

/**
 * Counters of one receiver process, kept in memory: the status page reads them over loopback
 * (`GET /webhooks/_stats`), so they need no store shared between processes. A restart starts
 * them at zero (`since` says when).
 */
export class ReceiverStatsRecorder {
  /** `spool`: the receiver's spool as it stands, read at each snapshot. */
  constructor(private readonly spool?: () => SpoolState) {}

  private readonly since = Date.now();
  private delivered = 0;
  private rejected = 0;
  private failed = 0;
  private lastFailedAt: number | null = null;
  private readonly buckets = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
  private readonly minutes: Minute[] = [];

  /** One answered delivery: its HTTP status and the time from its arrival to the answer. */
  record(statusCode: number, latencyMs: number, now = Date.now()): void {
    const minute = this.minuteAt(now);
    if (statusCode >= 200 && statusCode < 300) {
      this.delivered++;
      minute.delivered++;
      minute.latencySum += latencyMs;
      const index = LATENCY_BOUNDS_MS.findIndex((bound) => latencyMs <= bound);
      this.buckets[index === -1 ? LATENCY_BOUNDS_MS.length : index]!++;
    } else if (statusCode >= 400 && statusCode < 500) {
      this.rejected++;
      minute.rejected++;
    } else {
      this.failed++;
      minute.failed++;
      this.lastFailedAt = now;
    }
  }

  /**
   * A delivery to a registered connection refused for its signature (a mismatch, or a
   * timestamp out of tolerance): the sender may sign with another secret than the one
   * registered here, and every change it sends is lost once it gives up retrying.
   */
  signatureRefused(connectionId: string, now = Date.now()): void {
    const minute = this.minuteAt(now);
    minute.signatureRefused ??= new Map();
    minute.signatureRefused.set(connectionId, (minute.signatureRefused.get(connectionId) ?? 0) + 1);
    this.lastSignatureRefusedAt.set(connectionId, now);
  }

  private readonly lastSignatureRefusedAt = new Map<string, number>();
  private readonly lastVerifiedAt = new Map<string, number>();

  /** A delivery to a connection whose signature verified: its sender holds the secret. */
  signatureVerified(connectionId: string, now = Date.now()): void {
    this.lastVerifiedAt.set(connectionId, now);
  }

  snapshot(now = Date.now()): ReceiverStats {
    const recent = this.minutes.filter((m) => m.start >= now - RECENT_FAILURE_MINUTES * MINUTE_MS);
    const refused = new Map<string, number>();
    for (const m of recent) {
      for (const [id, n] of m.signatureRefused ?? []) refused.set(id, (refused.get(id) ?? 0) + n);
    }
    const from = now - KEPT_MINUTES * MINUTE_MS;
    return {
      since: this.since,
      now,
      delivered: this.delivered,
      rejected: this.rejected,
      failed: this.failed,
      latencyBuckets: [...this.buckets],
      latencyBoundsMs: LATENCY_BOUNDS_MS,
      minutes: this.minutes
        .filter((m) => m.start >= from)
        .map((m) => [
          m.start,
          m.delivered,
          m.rejected,
          m.delivered > 0 ? Math.round(m.latencySum / m.delivered) : null,
        ]),
      failedRecently: recent.reduce((sum, m) => sum + m.failed, 0),
      lastFailedAt: this.lastFailedAt,
      ...(this.spool ? { spool: this.spool() } : {}),
      signatureRefused: [...refused].map(([connectionId, count]) => ({
        connectionId,
        count,
        lastAt: this.lastSignatureRefusedAt.get(connectionId) ?? now,
        lastVerifiedAt: this.lastVerifiedAt.get(connectionId) ?? null,
      })),
    };
  }

  private minuteAt(now: number): Minute {
    const start = now - (now % MINUTE_MS);
    let last = this.minutes.at(-1);
    if (last?.start !== start) {
      last = { start, delivered: 0, rejected: 0, failed: 0, latencySum: 0 };
      this.minutes.push(last);
      while (this.minutes.length > KEPT_MINUTES + 1) this.minutes.shift();
    }
    return last;
  }
}

/** The latency under which `share` (0..1) of the deliveries were answered: a bucket's bound. */
export function latencyQuantile(stats: ReceiverStats, share: number): number | null {
  const total = stats.latencyBuckets.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  let seen = 0;
  for (const [i, count] of stats.latencyBuckets.entries()) {
    seen += count;
    // Slower than the last bound reads as that bound: the histogram knows no more.
    if (seen >= share * total) return stats.latencyBoundsMs[i] ?? stats.latencyBoundsMs.at(-1)!;
  }
  return stats.latencyBoundsMs.at(-1) ?? null;
}
