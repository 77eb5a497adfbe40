import { Context, type Info } from '@temporalio/activity';
import type { Client as ServiceClient } from '../api/client.js';
import { RateLimitedError } from '../api/errors.js';
import type { Ledger } from '../store/ledger.js';
import { type RateLimitSignal } from '../workflows/rate-limit-types.js';
import { rateLimitDelay } from './failures.js';
import { slotWaitBeats } from './heartbeats.js';

/**
 * Paced requests go out at this share of the configured rate. The service counts requests
 * in fixed one-second windows by arrival; at exactly the rate, a request delayed a few
 * milliseconds on its way lands in the next window beside that window's own, and one too
 * many is turned away. At 0.95 the spacing leaves a twentieth of a second of slack.
 */
export const PACING_HEADROOM = 0.95;

/**
 * How a mirror activity reads under a rate: pages enough for about five seconds of requests,
 * so the hand-back between activities (a workflow task, then the next dispatch, 0.1 to 0.5 s
 * on a busy machine) idles a small share of the connection's slots; four in flight, a page
 * asked for as soon as one answers (activities/mirror/read-slice.ts), so a slow answer does
 * not idle the others' slots. At the slowest pace (1/16 of the rate) an activity still ends well inside
 * its 5-minute limit.
 */
export function pacedPages(ratePerSecond: number): {
  pagesInFlight: number;
  maxPagesInFlight: number;
  pagesPerActivity: number;
} {
  return {
    pagesInFlight: 4,
    // The pace sets the speed here, not the round trip: more in flight would only queue.
    maxPagesInFlight: 4,
    pagesPerActivity: Math.max(4, Math.ceil(5 * ratePerSecond)),
  };
}

/** The service turned a request of a connection away for its rate. */
export interface Refusal {
  readonly connectionId: string;
  /** The workflow whose activity was refused, when that activity paces the connection. */
  readonly pacedWorkflowId: string | undefined;
  readonly signal: RateLimitSignal;
}

export interface RequestPacing {
  /** Requests a second each connection may make (EBS_RATE_LIMIT); 0: no slots are taken. */
  readonly ratePerSecond: number;
  /** The shared store whose request slots every worker draws from. */
  ledger(): Promise<Ledger>;
  /** Told of every refusal (worker/rate-limits.ts signals the workflows). */
  onRefused?(refusal: Refusal): void;
}

/** The calling activity's info, or undefined outside an activity. */
function activityInfo(): Info | undefined {
  try {
    return Context.current().info;
  } catch {
    return undefined;
  }
}

/**
 * The share of its rate the calling activity's connection runs at: the weight its workflow
 * gives it (`workflows/rate-limit.ts`, cut on each refusal and climbing back), 1 outside an
 * activity or when none was given.
 */
function currentShare(): number {
  const weight = activityInfo()?.priority?.fairnessWeight;
  return typeof weight === 'number' && weight > 0 ? Math.min(1, weight) : 1;
}

function refusalOf(connectionId: string, error: RateLimitedError): Refusal {
  const info = activityInfo();
  return {
    connectionId,
    pacedWorkflowId:
      info?.priority?.fairnessKey === connectionId ? info.workflowExecution?.workflowId : undefined,
    signal: {
      at: Date.now(),
      status: error.status ?? null,
      retryAfterMs: error.retryAfterMs ?? null,
      operation: error.operation ?? null,
    },
  };
}

/**
 * Waits in an activity so that a cancelled activity stops waiting; plain timers elsewhere.
 * An activity heartbeats while it waits: slots reserved by every lane of every worker, slowed
 * after refusals, can queue a request for longer than the heartbeat timeout. Without the
 * beats the attempt timed out, its retry queued behind the lost attempt's slots, and a pass
 * against a service stricter than EBS_RATE_LIMIT stalled. A beat also brings the cancellation
 * of an attempt that did time out, so it stops waiting instead of sending late.
 */
async function pause(ms: number): Promise<void> {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
  const timeoutMs = ctx.info.heartbeatTimeoutMs ?? 0;
  if (timeoutMs <= 0) return ctx.sleep(ms);
  const until = Date.now() + ms;
  const beats = slotWaitBeats(ctx, until);
  try {
    for (let left = ms; left > 0; left = until - Date.now()) {
      await ctx.sleep(Math.min(left, Math.max(100, timeoutMs / 3)));
      // Beats only while it still waits: the first beat after it is the attempt's progress.
      if (until > Date.now()) beats.beat();
    }
  } finally {
    beats.done();
  }
}

/**
 * The client with every request of `connectionId` drawn from the connection's slots in the
 * shared store (DESIGN decision 7; docs/rate-limits.md): each waits for its slot, so all
 * workers on all machines sharing the store together send at most the rate, evenly spaced.
 * A refusal for the rate holds the connection's slots for Retry-After plus jitter, so the
 * other workers wait too instead of each finding out with a refusal of its own, and is
 * reported to `onRefused`. With no rate, refusals are still reported.
 */
export function pacedClient(
  client: ServiceClient,
  connectionId: string,
  pacing: RequestPacing,
): ServiceClient {
  const { transport } = client;
  const call = transport.call.bind(transport);
  transport.call = async (operation, callOptions) => {
    const ledger = pacing.ratePerSecond > 0 ? await pacing.ledger() : undefined;
    if (ledger) {
      const interval = 1_000 / (pacing.ratePerSecond * PACING_HEADROOM * currentShare());
      const wait = await ledger.reserveRequest(connectionId, interval);
      if (wait > 0) await pause(wait);
    }
    try {
      return await call(operation, callOptions);
    } catch (error) {
      if (error instanceof RateLimitedError) {
        pacing.onRefused?.(refusalOf(connectionId, error));
        // The refusal reaches the activity either way; a store that cannot be told says so
        // through the next reservation.
        await ledger
          ?.holdRequests(connectionId, rateLimitDelay(error.retryAfterMs))
          .catch(() => undefined);
      }
      throw error;
    }
  };
  return client;
}

/**
 * One paced client per connection (`pacedClient`, each on its own connection's slots), made
 * by `newClient` on first use and kept for `ttlMs` (default: for good), so that a reconnect's
 * new key or base URL is picked up; a client that fails to be made is not kept.
 */
export function pacedClients(
  newClient: (connectionId: string) => ServiceClient | Promise<ServiceClient>,
  pacing: RequestPacing,
  ttlMs = Infinity,
): ((connectionId: string) => Promise<ServiceClient>) & { forget(connectionId: string): void } {
  const clients = new Map<string, { client: Promise<ServiceClient>; at: number }>();
  const clientFor = (connectionId: string): Promise<ServiceClient> => {
    const cached = clients.get(connectionId);
    if (cached && Date.now() - cached.at < ttlMs) return cached.client;
    const client = Promise.resolve(newClient(connectionId)).then((made) =>
      pacedClient(made, connectionId, pacing),
    );
    const entry = { client, at: Date.now() };
    clients.set(connectionId, entry);
    client.catch(() => {
      if (clients.get(connectionId) === entry) clients.delete(connectionId);
    });
    return client;
  };
  /** The next call makes a new client (the connection was reconnected). */
  const forget = (connectionId: string): void => {
    clients.delete(connectionId);
  };
  return Object.assign(clientFor, { forget });
}
