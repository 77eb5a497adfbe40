import { performance } from 'node:perf_hooks';

/**
 * How many pages a slice keeps in flight, sized from what it measures instead of fixed. Pages
 * in flight pay off only while this process waits for the service: a page takes a round trip
 * to arrive and some work here once it has. Over a fast link (a local service) four keep the
 * process busy; over a slow one (a service 200 ms away) four leave it idle most of the time.
 * So a slice doubles its pages in flight, up to a maximum, whenever its pages were held back
 * by that number while the process sat mostly idle and its writer kept up, and halves them,
 * down to the configured least, while the process or the writer is busy most of the time (more
 * could not help, and each holds a page in memory); a fast link reads with the least, as
 * before. The measure is the event loop's own utilization (the share of time it ran code
 * rather than waited), which is what more pages in flight could use, and which a page's round
 * trip cannot inflate the way a timed request would (an answer that waits behind busy code
 * would look slow and ask for more lanes), with the writer's share of the time beside it.
 */

/** Time between decisions: long enough that one page's work cannot tip the measure. */
const WINDOW_MS = 250;
/** Below this share of busy time, the process waits on the service more than it works. */
const IDLE_BELOW = 0.5;
/** Above it, the process has little time to handle more pages than it has. */
const BUSY_ABOVE = 0.8;
/**
 * Above this share of the window spent writing, the destination sets the pace: pages read
 * sooner would only wait for the writer (and an event loop waiting on a database looks idle).
 */
const WRITER_BUSY_ABOVE = 0.5;

export interface LaneBounds {
  /** Pages in flight at the start (what an earlier slice grew to, or the least). */
  start: number;
  /** The least there will be (4 by default). */
  min: number;
  /** The most: the least itself where requests are paced by a rate limit. */
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
  private readonly min: number;
  private readonly max: number;
  private held = false;
  private writingMs = 0;
  private windowStart: number;

  constructor(
    bounds: LaneBounds,
    private readonly meter: UtilizationMeter = eventLoopMeter(),
    private readonly now: () => number = () => performance.now(),
  ) {
    this.min = Math.max(1, Math.floor(bounds.min));
    this.max = Math.max(this.min, Math.floor(bounds.max));
    this.current = Math.min(this.max, Math.max(this.min, Math.floor(bounds.start)));
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

  /** The writer spent this long on a batch. */
  wrote(ms: number): void {
    this.writingMs += ms;
  }

  /**
   * A page arrived: at the end of each window, doubles the lanes when pages were held back
   * while the loop was mostly idle and the writer kept up, halves them while the loop or the
   * writer was busy most of the time. Returns the new number when it changed.
   */
  arrived(): number | undefined {
    const at = this.now();
    if (at - this.windowStart < WINDOW_MS) return undefined;
    const busy = this.meter();
    const writing = this.writingMs / (at - this.windowStart);
    const held = this.held;
    this.windowStart = at;
    this.held = false;
    this.writingMs = 0;
    const before = this.current;
    if (held && busy < IDLE_BELOW && writing <= WRITER_BUSY_ABOVE) {
      this.current = Math.min(this.max, this.current * 2);
    } else if (busy > BUSY_ABOVE || writing > WRITER_BUSY_ABOVE) {
      this.current = Math.max(this.min, Math.floor(this.current / 2));
    }
    return this.current === before ? undefined : this.current;
  }
}
