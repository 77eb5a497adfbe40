import { ApplicationFailure, Context } from '@temporalio/activity';
import got from 'got';
import { unreachableReason } from '../../api/network-failures.js';
import { REDIRECT_POLICY, redirectRefusal } from '../../config/redirect-policy.js';
import { Webhook } from 'standardwebhooks';
import type { PayloadCodec } from '@temporalio/common';
import {
  sendsTo,
  type AutomationEndpoint,
  type AutomationStore,
  type DeliveryStatus,
} from '../../store/automation-endpoints.js';
import type { Inbox, OwedChange } from '../../store/inbox.js';
import { openValue } from '../../store/sealed-values.js';

/** One applied change. */
export interface ForwardInput {
  /** Stable per change (the drain batch and record): a retry carries the same id. */
  webhookId: string;
  connectionId: string;
  resource: string;
  recordId: string;
  action: 'written' | 'deleted';
  /** The fresh record as written (canonical form); null when it was deleted. */
  record: unknown;
  /** When the change was applied (workflow time, so retries send the same body). */
  appliedAt: string;
}

export interface ForwardOutput {
  delivered: number;
  /** Endpoints that refused for good (4xx, 410): not retried. */
  refused: number;
}

export interface BreakerPolicy {
  /** Consecutive failed attempts that open an endpoint's breaker. */
  threshold: number;
  /** How long it stays open before one probe is let through. */
  openMs: number;
}

export const DEFAULT_BREAKER: BreakerPolicy = { threshold: 5, openMs: 60_000 };
const REQUEST_TIMEOUT_MS = 10_000;

/** Whether the endpoint's filters take the change, whatever its state. */
function filtersTake(
  endpoint: AutomationEndpoint,
  input: Pick<ForwardInput, 'resource' | 'action' | 'connectionId'>,
): boolean {
  const { resources, actions, connections } = endpoint.filters;
  return (
    (resources.length === 0 || resources.includes(input.resource)) &&
    (actions.length === 0 || actions.includes(input.action)) &&
    (connections.length === 0 || connections.includes(input.connectionId))
  );
}

export function endpointWants(
  endpoint: AutomationEndpoint,
  input: Pick<ForwardInput, 'resource' | 'action' | 'connectionId'>,
): boolean {
  return sendsTo(endpoint) && filtersTake(endpoint, input);
}

/**
 * Whether the change was owed to the endpoint when it answered 410 (to this change's batch,
 * or to another since the change was applied): it is given up, and the log says so.
 */
function goneSinceApplied(
  endpoint: AutomationEndpoint,
  input: ForwardInput,
  gone: ReadonlySet<string>,
): boolean {
  if (!filtersTake(endpoint, input)) return false;
  if (gone.has(endpoint.name)) return true;
  return (
    endpoint.disabledAt !== null &&
    endpoint.unreadable === undefined &&
    endpoint.refusedReason === undefined &&
    Date.parse(endpoint.disabledAt) >= Date.parse(input.appliedAt)
  );
}

/** The log's reason for a change not sent to an endpoint that had answered 410. */
export const GONE_BEFORE_SENT = 'not sent: the endpoint answered 410 Gone to an earlier change';

/** A retry is answered by these statuses; any other 4xx is the endpoint refusing for good. */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** What one attempt at one change came to. */
interface Sent {
  delivered: number;
  refused: number;
  /** Endpoints still owed the change (failed, or their breaker open). */
  owed: string[];
}

/** Where the drain keeps the changes it owes endpoints (activities/mirror/drain-inbox.ts). */
export interface OwedChanges {
  inbox(): Promise<Inbox>;
  /** Opens the sealed records (the payload codec). */
  codec: PayloadCodec;
}

export interface ForwardBatchInput {
  connectionId: string;
  /** The drain batch whose changes these are. */
  batchKey: string;
}

export interface ForwardLeftoversInput {
  connectionId: string;
  /** ISO time: changes kept before it are an earlier run's. */
  before: string;
}

/** Leftover changes sent per page. */
const LEFTOVER_PAGE = 500;

/** The webhook-id of a change a drain batch kept: the same on every retry of its forwarding. */
export function changeWebhookId(batchKey: string, resource: string, recordId: string): string {
  return `msg_${batchKey}_${resource}_${recordId}`;
}

/**
 * Automations out: the fresh record, signed as Standard Webhooks, to every endpoint whose
 * filters match. Attempts are these activities' Temporal retries (backoff in the workflow's
 * retry policy); the log remembers what each endpoint took, so a retry sends only to those
 * still owed. An open breaker fails the attempt fast without touching the endpoint.
 * `forwardChanges` sends what a drain batch kept in the store (the record never enters
 * Temporal history); `forwardChange` the record a per-record workflow of an earlier version
 * carries (kept while such workflows may still run; see docs/webhooks.md).
 */
export function createAutomationActivities(
  store: AutomationStore | undefined,
  breaker: BreakerPolicy = DEFAULT_BREAKER,
  kept?: OwedChanges,
) {
  /**
   * Sends one change to the endpoints owed it. `gone` holds the endpoints that answered 410
   * in this activity: the list was read once for all its changes, and the next change of a
   * batch still went to an endpoint disabled by the change before.
   */
  const send = async (
    store: AutomationStore,
    endpoints: readonly AutomationEndpoint[],
    input: ForwardInput,
    gone: Set<string> = new Set(),
  ): Promise<Sent> => {
    const result: Sent = { delivered: 0, refused: 0, owed: [] };
    const body = JSON.stringify({
      type: `${input.resource}.${input.action}`,
      timestamp: input.appliedAt,
      data: {
        connection: input.connectionId,
        resource: input.resource,
        id: input.recordId,
        action: input.action,
        record: input.record,
      },
    });
    const context = Context.current();
    for (const endpoint of endpoints) {
      // Alive, per delivery: a worker killed mid-forward is found out in FORWARDING's
      // heartbeat timeout, not its start-to-close one.
      context.heartbeat();
      // An attempt Temporal gave up on (its heartbeat timed out: a delivery slow through its
      // redirects, Temporal away) sends nothing more: the next attempt sends what this one
      // did not log, and both sending would deliver each change twice.
      if (context.cancellationSignal.aborted) await context.cancelled;
      const givenUp = goneSinceApplied(endpoint, input, gone);
      if (!givenUp && !endpointWants(endpoint, input)) continue;
      // Owed only the changes applied since it was added: one added while a change was being
      // retried for others got that change too, though it came before the endpoint.
      if (Date.parse(endpoint.createdAt) > Date.parse(input.appliedAt)) continue;
      const before = store.logged(input.webhookId, endpoint.name);
      if (before && before.status !== 'failed' && before.status !== 'breaker_open') continue;
      // Requests this endpoint got for this change: the activity's attempt counted those of
      // every endpoint (an endpoint's first request said attempts=7).
      const tried = before?.attempts ?? 0;
      const log = (
        status: DeliveryStatus,
        httpStatus: number | null,
        reason: string | null = null,
        requested = status !== 'breaker_open',
      ): void =>
        store.log({
          webhookId: input.webhookId,
          endpoint: endpoint.name,
          connectionId: input.connectionId,
          resource: input.resource,
          recordId: input.recordId,
          action: input.action,
          status,
          httpStatus,
          reason,
          // A breaker that is open, or a change given up unsent, made no request to count.
          attempts: requested ? tried + 1 : tried,
          at: new Date().toISOString(),
        });
      // The endpoint answered 410 after this change was applied: the change is given up for
      // it, as the docs say, and the log says so rather than nothing.
      if (givenUp) {
        log('gone', null, GONE_BEFORE_SENT, false);
        result.refused += 1;
        continue;
      }
      if (!store.admit(endpoint.name, Date.now(), breaker.openMs)) {
        log('breaker_open', null);
        result.owed.push(endpoint.name);
        continue;
      }
      let status: number | null = null;
      let unanswered: string | null = null;
      try {
        const sentAt = new Date();
        const signed = new Webhook(endpoint.secret).sign(input.webhookId, sentAt, body);
        const response = await got.post(endpoint.url, {
          body,
          headers: {
            'content-type': 'application/json',
            'webhook-id': input.webhookId,
            'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
            'webhook-signature': signed,
          },
          throwHttpErrors: false,
          // A 3xx off the endpoint's origin is its answer: a refusal, never re-sent there.
          ...REDIRECT_POLICY,
          retry: { limit: 0 },
          // Per hop: each redirect followed is a request of its own, and a heartbeat, so no
          // delivery goes REQUEST_TIMEOUT_MS without one.
          timeout: { request: REQUEST_TIMEOUT_MS },
          hooks: { beforeRedirect: [() => context.heartbeat()] },
          signal: context.cancellationSignal,
        });
        status = response.statusCode;
        // Without either address, as unreachableReason: the log names the endpoint, and its
        // URL may carry a token.
        unanswered =
          redirectRefusal(status, response.url, response.headers.location, {
            anonymous: true,
            carries: "a signed change goes to the endpoint's origin only",
          }) ?? null;
      } catch (error) {
        // Stopped by the cancellation above: no answer of the endpoint's, nothing to log.
        if (context.cancellationSignal.aborted) await context.cancelled;
        status = null;
        // Said without Node's message, which names the endpoint's address.
        unanswered = unreachableReason(error);
      }
      if (status !== null && status >= 200 && status < 300) {
        store.succeeded(endpoint.name);
        log('delivered', status);
        result.delivered += 1;
      } else if (status === 410) {
        store.disable(endpoint.name, 'answered 410 Gone');
        gone.add(endpoint.name);
        log('gone', status);
        result.refused += 1;
      } else if (status !== null && !retryableStatus(status)) {
        log('rejected', status, unanswered);
        result.refused += 1;
      } else {
        store.failed(endpoint.name, Date.now(), breaker.threshold, breaker.openMs);
        log('failed', status, unanswered);
        result.owed.push(endpoint.name);
      }
    }
    return result;
  };

  /** Sends kept changes; drops each that every endpoint wanting it has taken. */
  const sendKept = async (
    store: AutomationStore,
    inbox: Inbox,
    changes: readonly OwedChange[],
  ): Promise<Sent> => {
    const total: Sent = { delivered: 0, refused: 0, owed: [] };
    if (changes.length === 0 || !kept) return total;
    const endpoints = await store.list();
    const gone = new Set<string>();
    const done: OwedChange[] = [];
    for (const change of changes) {
      const sent = await send(
        store,
        endpoints,
        {
          webhookId: changeWebhookId(change.batchKey, change.resource, change.recordId),
          connectionId: change.connectionId,
          resource: change.resource,
          recordId: change.recordId,
          action: change.action,
          record: (await openValue<unknown>(kept.codec, change.sealed)) ?? null,
          appliedAt: change.appliedAt.toISOString(),
        },
        gone,
      );
      total.delivered += sent.delivered;
      total.refused += sent.refused;
      total.owed.push(...sent.owed);
      if (sent.owed.length === 0) done.push(change);
    }
    // Taken by every endpoint that wants it: the sealed record goes from the store.
    const byBatch = new Map<string, OwedChange[]>();
    for (const change of done)
      byBatch.set(change.batchKey, [...(byBatch.get(change.batchKey) ?? []), change]);
    for (const [batchKey, group] of byBatch) {
      await inbox.dropChanges(group[0]!.connectionId, batchKey, group);
    }
    return total;
  };

  const owedFailure = (owed: readonly string[]) =>
    ApplicationFailure.retryable(
      `automation endpoints not reached yet: ${[...new Set(owed)].join(', ')}`,
      'AutomationDeliveryFailed',
    );

  return {
    async forwardChange(input: ForwardInput): Promise<ForwardOutput> {
      if (!store) return { delivered: 0, refused: 0 };
      const sent = await send(store, await store.list(), input);
      if (sent.owed.length > 0) throw owedFailure(sent.owed);
      return { delivered: sent.delivered, refused: sent.refused };
    },

    async forwardChanges(input: ForwardBatchInput): Promise<ForwardOutput> {
      if (!store || !kept) return { delivered: 0, refused: 0 };
      const inbox = await kept.inbox();
      const sent = await sendKept(
        store,
        inbox,
        await inbox.owedChanges(input.connectionId, input.batchKey),
      );
      if (sent.owed.length > 0) throw owedFailure(sent.owed);
      return { delivered: sent.delivered, refused: sent.refused };
    },

    /**
     * The changes an earlier run of the drain was still forwarding when it continued as new
     * (kept before `before`, the new run's start): sent as forwardChanges sends a batch's,
     * a page at a time.
     */
    async forwardLeftovers(input: ForwardLeftoversInput): Promise<ForwardOutput> {
      const result: ForwardOutput = { delivered: 0, refused: 0 };
      if (!store || !kept) return result;
      const inbox = await kept.inbox();
      for (;;) {
        const page = await inbox.leftoverChanges(
          input.connectionId,
          new Date(input.before),
          LEFTOVER_PAGE,
        );
        const sent = await sendKept(store, inbox, page);
        result.delivered += sent.delivered;
        result.refused += sent.refused;
        if (sent.owed.length > 0) throw owedFailure(sent.owed);
        // Every change of a full page went, so the next page holds others.
        if (page.length < LEFTOVER_PAGE) return result;
        Context.current().heartbeat();
      }
    },
  };
}
