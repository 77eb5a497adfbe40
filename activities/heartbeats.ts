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
  progressed?: true;
  /**
   * Epoch ms until which a request of the attempt waits for the connection's rate slot
   * (activities/request-pacing.ts), while it waits: a wait is no progress, and a pass whose
   * requests wait (a long Retry-After held the slots) said nothing of it in `ebsync status`.
   */
  slotWaitUntil?: number;
}

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
/** Until when each request of a running activity waits for its rate slot, while it waits. */
const slotWaits = new WeakMap<Beating, Map<object, number>>();

/** What the activity's beats carry now; undefined when nothing (a beat without details). */
function detailsOf(context: Beating): BeatDetails | undefined {
  const waits = slotWaits.get(context);
  const until = waits && waits.size > 0 ? Math.max(...waits.values()) : undefined;
  if (until === undefined) return progressed.has(context) ? { progressed: true } : undefined;
  return { ...(progressed.has(context) ? { progressed: true } : {}), slotWaitUntil: until };
}

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

/** A heartbeat that says work moved. */
export function progressBeat(context: Beating, at = Date.now()): void {
  lastProgress.set(context, at);
  progressed.add(context);
  context.heartbeat(detailsOf(context));
}

/**
 * A slot wait shorter than this is the pace itself (a slot every 1/rate s): it sends no beat
 * of its own. Sent, a beat saying "waits" as an attempt's first went out at once and the SDK
 * held the next (its page answers' progress) for most of the heartbeat timeout.
 */
const SLOT_WAIT_BEATS_MS = 2_000;

/**
 * Beats while a request waits for its rate slot until `until` (epoch ms): `beat()` during the
 * wait, `done()` after it. The wait keeps the attempt alive (slots queued behind other lanes
 * and workers, or held after a refusal, can outlast the heartbeat timeout), but it is not
 * progress: its beats say that it waits and until when, and an attempt that only waited after
 * a failure is still shown retrying (cli/pass-retry.ts).
 */
export function slotWaitBeats(context: Beating, until: number): { beat(): void; done(): void } {
  lastProgress.set(context, Date.now());
  if (until - Date.now() < SLOT_WAIT_BEATS_MS) {
    return { beat: () => lastProgress.set(context, Date.now()), done: () => undefined };
  }
  const waits = slotWaits.get(context) ?? new Map<object, number>();
  slotWaits.set(context, waits);
  // Requests of one attempt wait side by side (pages in flight): each wait is its own entry.
  const key = {};
  waits.set(key, until);
  const beat = (): void => {
    lastProgress.set(context, Date.now());
    context.heartbeat(detailsOf(context));
  };
  beat();
  return {
    beat,
    done: () => {
      waits.delete(key);
    },
  };
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
      // Once it has made progress, or while a request waits for its slot, its beats say so as
      // the other beats do: a beat with no details would clear theirs.
      if (since <= stalledAfterMs) context.heartbeat(detailsOf(context));
    }, everyMs);
    timer.unref();
    try {
      return await activity(...args);
    } finally {
      clearInterval(timer);
    }
  };
}
