import type { Acceptance, Inbox, Notice } from '../store/inbox.js';
import { committedWithin } from './commit-deadline.js';
import type { WebhookSpool } from '../store/webhook-spool.js';

/** How a notice was taken: into the inbox (`stored`, `duplicate`) or into the spool. */
export type Taking = Acceptance | 'spooled';

/** The spool as the status shows it. */
export interface SpoolState {
  /** Notices held now, waiting for the store. */
  readonly held: number;
  /** Epoch ms the oldest of them was kept; null when none is. */
  readonly oldestAt: number | null;
  /** Notices kept in it since this process started. */
  readonly keptSinceStart: number;
}

export interface SpooledStoreOptions {
  inbox(): Promise<Inbox>;
  spool: WebhookSpool;
  /** How long a notice waits for the inbox's commit before it is spooled instead. */
  inboxWaitMs: number;
  /** Told of the connections whose notices were forwarded: their drains are to be woken. */
  forwarded(connectionIds: readonly string[]): void;
  log(level: 'info' | 'warn', fields: Record<string, unknown>, message: string): void;
  /** Where the spool lives, for the log. */
  spoolFile: string;
  /** First and longest pause between attempts to forward while the store stays away. */
  retryMs?: { first: number; max: number };
}

/** Notices forwarded to the inbox in one go: one group commit there. */
const FORWARD_BATCH = 500;
const DEFAULT_RETRY_MS = { first: 500, max: 5_000 };
/** While the store stays away, the log says so again at most this often. */
const STILL_AWAY_LOG_MS = 60_000;

/**
 * Where the receiver puts a verified notice: the store's inbox, or, when the store cannot
 * take it within `inboxWaitMs`, the receiver's local spool. Either is durable before the 2xx,
 * so a sender is answered 2xx through a store outage of any length and gives up on nothing;
 * its notices reach the inbox, and their drains are woken, once the store is back.
 *
 * While the spool holds anything, new notices go to it too, behind the others: each would
 * otherwise wait out the store's timeout first, and the drains meet the notices in the order
 * they came. One forwarding loop at a time moves them, oldest first, backing off while the
 * store stays away. The inbox dedupes by delivery id, so a notice whose commit got through
 * after it was spooled, or forwarded by another receiver sharing the spool, counts once.
 */
export class SpooledStore {
  private holding: boolean;
  private keptSinceStart = 0;
  private timer: NodeJS.Timeout | undefined;
  private forwarding: Promise<void> | undefined;
  private closed = false;
  private pauseMs: number;
  private readonly retry: { first: number; max: number };
  private awaySince: number | null = null;
  private awayLoggedAt = 0;

  constructor(private readonly options: SpooledStoreOptions) {
    this.retry = options.retryMs ?? DEFAULT_RETRY_MS;
    this.pauseMs = this.retry.first;
    // Notices an earlier run (or another receiver on this data dir) left: forwarded first.
    this.holding = options.spool.held().count > 0;
    if (this.holding) this.schedule(0);
  }

  /** Takes a notice durably; rejects only when neither the inbox nor the spool could. */
  async take(notice: Notice): Promise<Taking> {
    if (this.holding) return this.keep(notice, undefined);
    try {
      return await committedWithin(
        this.options.inbox().then((inbox) => inbox.accept(notice)),
        this.options.inboxWaitMs,
      );
    } catch (error) {
      return this.keep(notice, error);
    }
  }

  /** The spool now, for `GET /webhooks/_stats`. */
  state(): SpoolState {
    const held = this.options.spool.held();
    return {
      held: held.count,
      oldestAt: held.oldestAt?.getTime() ?? null,
      keptSinceStart: this.keptSinceStart,
    };
  }

  /** Stops forwarding; what the spool holds stays for the next start. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.forwarding;
  }

  private keep(notice: Notice, storeError: unknown): Taking {
    const kept = this.options.spool.keep(notice);
    if (kept === 'duplicate') return 'duplicate';
    this.keptSinceStart++;
    if (!this.holding) {
      this.holding = true;
      this.awaySince = Date.now();
      this.awayLoggedAt = Date.now();
      this.options.log(
        'warn',
        { spool: this.options.spoolFile, error: messageOf(storeError) },
        'the store cannot take webhook notices; keeping them in the receiver spool until it can (senders are answered 2xx)',
      );
      this.schedule(this.retry.first);
    }
    return 'spooled';
  }

  private schedule(ms: number): void {
    if (this.closed || this.timer || this.forwarding) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.forwarding = this.forward().finally(() => {
        this.forwarding = undefined;
      });
    }, ms);
  }

  /** Moves the spool into the inbox, oldest first, until it is empty or the store fails. */
  private async forward(): Promise<void> {
    let moved = 0;
    try {
      const inbox = await this.options.inbox();
      for (;;) {
        if (this.closed) return;
        const batch = this.options.spool.oldest(FORWARD_BATCH);
        if (batch.length === 0) break;
        await Promise.all(
          batch.map(({ seq: _seq, receivedAt: _kept, ...notice }) => inbox.accept(notice)),
        );
        this.options.spool.drop(batch);
        moved += batch.length;
        this.options.forwarded([...new Set(batch.map((n) => n.connectionId))]);
      }
      // Read empty on this tick: nothing kept after it is left behind.
      this.holding = false;
      this.pauseMs = this.retry.first;
      this.options.log(
        'info',
        {
          forwarded: moved,
          ...(this.awaySince === null ? {} : { awayMs: Date.now() - this.awaySince }),
        },
        'the store takes webhook notices again; the spooled ones are in its inbox',
      );
      this.awaySince = null;
    } catch (error) {
      if (Date.now() - this.awayLoggedAt >= STILL_AWAY_LOG_MS) {
        this.awayLoggedAt = Date.now();
        this.options.log(
          'warn',
          {
            spool: this.options.spoolFile,
            held: this.options.spool.held().count,
            error: messageOf(error),
          },
          'the store still cannot take webhook notices; they stay in the receiver spool',
        );
      }
      const pause = this.pauseMs;
      this.pauseMs = Math.min(this.pauseMs * 2, this.retry.max);
      // After this attempt's promise is cleared, so the next one may be scheduled.
      setImmediate(() => this.schedule(pause));
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
