/**
 * Paces calls to a vendor whose limit is N calls per rolling window (HubSpot's ten seconds,
 * Pipedrive's two): a call starts only while fewer than N started-and-unfinished or recently
 * finished calls are in the window. Finish times are counted, not start times, so the
 * vendor (which counts on arrival) never sees more than N in its own window.
 */
export class RollingWindow {
  private finished: number[] = [];
  private inFlight = 0;
  private blockedUntil = 0;

  constructor(
    private max: number,
    private intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Adopts what the vendor's rate headers say (ignoring values that make no sense). The limit
   * is shared with every other client of the account, so when the vendor has fewer calls left
   * than this window thinks, the difference counts as calls made just now by someone else.
   */
  learn(max: number | undefined, intervalMs: number | undefined, remaining?: number): void {
    if (max !== undefined && Number.isInteger(max) && max > 0) this.max = max;
    if (intervalMs !== undefined && Number.isFinite(intervalMs) && intervalMs > 0) {
      this.intervalMs = intervalMs;
    }
    if (remaining === undefined || !Number.isFinite(remaining)) return;
    const now = this.now();
    this.finished = this.finished.filter((t) => t > now - this.intervalMs);
    const ours = this.max - this.inFlight - this.finished.length;
    for (let i = Math.max(0, remaining); i < ours; i += 1) this.finished.push(now);
  }

  /** No call starts before `ms` from now (the vendor said the window is full). */
  pauseFor(ms: number): void {
    this.blockedUntil = Math.max(this.blockedUntil, this.now() + ms);
  }

  get windowMs(): number {
    return this.intervalMs;
  }

  async acquire(): Promise<void> {
    for (;;) {
      const now = this.now();
      this.finished = this.finished.filter((t) => t > now - this.intervalMs);
      if (now >= this.blockedUntil && this.inFlight + this.finished.length < this.max) {
        this.inFlight += 1;
        return;
      }
      const nextFree =
        this.finished.length > 0 ? (this.finished[0] ?? now) + this.intervalMs : now + 50;
      const wait = Math.max(5, Math.max(this.blockedUntil, nextFree) - now);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  release(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.finished.push(this.now());
  }
}
