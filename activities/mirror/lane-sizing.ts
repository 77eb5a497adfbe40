import { performance } from 'node:perf_hooks';

/**
 * How many pages a slice keeps in flight, sized from what it measures instead of fixed. Pages
 * in flight pay off only while this process waits for the service: a page takes a round trip
 * to arrive and some work here once it has. Over a fast link (a local service) four keep the
 * process busy; over a slow one (a service 200 ms away) four leave it idle most of the time.
 * So the slice starts at its configured number and doubles it, up to a maximum, whenever its
 * pages were held back by that number while the process sat mostly idle; it never goes below
 * the start, so a fast link reads exactly as before. The measure is the event loop's own
 * utilization (the share of time it ran code rather than waited), which is what more pages
 * in flight could use, and which a page's round trip cannot inflate the way a timed request
 * would (an answer that waits behind busy code would look slow and ask for more lanes).
 */

/** Time between decisions: long enough that one page's work cannot tip the measure. */
const WINDOW_MS = 250;
/** Below this share of busy time, the process waits on the service more than it works. */
const IDLE_BELOW = 0.5;

export interface LaneBounds {
  /** Pages in flight at the start, and the least there will be (EBSYNC's 4 by default). */
  start: number;
  /** The most: the start itself where requests are paced by a rate limit. */
  max: number;
}

/** The event loop's busy share since the last call (0..1). */
export type UtilizationMeter = () => number;

/** Measures this thread's event loop with Node's eventLoopUtilization. */
export function eventLoopMeter(): UtilizationMeter {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const share = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return share;
  };
}

export class LaneSizer {
  private current: number;
  private readonly max: number;
  private held = false;
  private windowStart: number;

  constructor(
    bounds: LaneBounds,
    private readonly meter: UtilizationMeter = eventLoopMeter(),
    private readonly now: () => number = () => performance.now(),
  ) {
    this.current = Math.max(1, Math.floor(bounds.start));
    this.max = Math.max(this.current, Math.floor(bounds.max));
    this.windowStart = this.now();
  }

  /** Pages to keep in flight now. */
  get lanes(): number {
    return this.current;
  }

  /** A page was ready to ask for but the lanes were all taken. */
  heldBack(): void {
    this.held = true;
  }

  /**
   * A page arrived: at the end of each window, doubles the lanes when pages were held back
   * while the loop was mostly idle. Returns the new number when it changed.
   */
  arrived(): number | undefined {
    const at = this.now();
    if (at - this.windowStart < WINDOW_MS) return undefined;
    const busy = this.meter();
    const grow = this.held && busy < IDLE_BELOW && this.current < this.max;
    this.windowStart = at;
    this.held = false;
    if (!grow) return undefined;
    this.current = Math.min(this.max, this.current * 2);
    return this.current;
  }
}
