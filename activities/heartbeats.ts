import { Context } from '@temporalio/activity';

/** Heartbeats of one activity go to Temporal at most this often. */
export const HEARTBEAT_EVERY_MS = 1_000;

/**
 * How often a running activity says it is alive (see beatingWhileAlive): well inside the
 * heartbeat timeout of the workflows that run it (workflows/heartbeat-timeout.ts).
 */
export const ALIVE_EVERY_MS = 2_000;

/**
 * How long an activity may go without progress before it stops saying it is alive, so that
 * Temporal times it out and retries it: the heartbeat timeout every such activity had before
 * the beats of liveness came (a page, a batch or a rate slot is never this long in coming).
 */
export const STALLED_AFTER_MS = 60_000;

type Beating = Pick<Context, 'heartbeat'>;

/**
 * What the beats of an attempt that has made progress carry. Temporal keeps an activity's last
 * failure and attempt number until the activity completes, so its description cannot tell an
 * attempt that reads again after a failure from one still retrying; `ebsync sync` and `ebsync
 * status` read these details for that (cli/pass-retry.ts). Beats before any progress carry none.
 */
export interface BeatDetails {
  progressed: true;
}
const PROGRESSED: BeatDetails = { progressed: true };

function currentContext(): Beating | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** When each running activity last made progress (its context as key). */
const lastProgress = new WeakMap<Beating, number>();
/** The running activities that have made progress (a context is one attempt's). */
const progressed = new WeakSet<Beating>();

/**
 * A heartbeat to call as often as work moves (after each record read, each batch), sent at
 * most every `everyMs`. The SDK encodes each call's details through the payload codec
 * (AES-GCM and a fresh IV) before its own throttle: called per record, that was about a
 * tenth of a millisecond of the worker's CPU per webhook delivery. Each beat also counts as
 * progress for beatingWhileAlive.
 */
export function heartbeatEvery(
  context: Beating,
  everyMs = HEARTBEAT_EVERY_MS,
  now: () => number = Date.now,
): () => void {
  let last = -Infinity;
  return () => {
    const at = now();
    if (at - last < everyMs) return;
    last = at;
    progressBeat(context, at);
  };
}

/** A heartbeat that says work moved (a rate slot waited for counts: the wait is the work). */
export function progressBeat(context: Beating, at = Date.now()): void {
  lastProgress.set(context, at);
  progressed.add(context);
  context.heartbeat(PROGRESSED);
}

/**
 * The activity, saying it is alive every ALIVE_EVERY_MS while it runs and has made progress
 * within STALLED_AFTER_MS (or started within it). A worker killed mid-activity (SIGKILL, a
 * lost machine) then shows within the short heartbeat timeout of its workflow, and another
 * worker retries the attempt some 20 s later instead of a minute; a page the service takes
 * 25 s to answer does not time the attempt out, since the process is alive meanwhile; and an
 * activity stuck on something that never answers still times out, a minute after its last
 * progress, as before. Called outside an activity (tests of the functions alone), it only
 * runs it. Its beats carry no details but BeatDetails: an activity that keeps a checkpoint in its
 * heartbeat details (activities/connections.ts) must not be wrapped, or the beats would clear it.
 */
export function beatingWhileAlive<Args extends unknown[], Result>(
  activity: (...args: Args) => Promise<Result>,
  options: {
    everyMs?: number;
    stalledAfterMs?: number;
    /** The running activity's context (tests give their own); none: just run it. */
    context?: () => Beating | undefined;
  } = {},
): (...args: Args) => Promise<Result> {
  const everyMs = options.everyMs ?? ALIVE_EVERY_MS;
  const stalledAfterMs = options.stalledAfterMs ?? STALLED_AFTER_MS;
  const contextOf = options.context ?? currentContext;
  return async (...args) => {
    const context = contextOf();
    if (context === undefined) return activity(...args);
    const started = Date.now();
    lastProgress.set(context, started);
    const timer = setInterval(() => {
      const since = Date.now() - (lastProgress.get(context) ?? started);
      // Once it has made progress, its beats say so as its progress beats do: a beat with no
      // details would clear theirs.
      if (since <= stalledAfterMs)
        context.heartbeat(progressed.has(context) ? PROGRESSED : undefined);
    }, everyMs);
    timer.unref();
    try {
      return await activity(...args);
    } finally {
      clearInterval(timer);
    }
  };
}
