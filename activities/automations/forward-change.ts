import { ApplicationFailure, Context } from '@temporalio/activity';
import got from 'got';
import { REDIRECT_POLICY } from '../../config/redirect-policy.js';
import { Webhook } from 'standardwebhooks';
import type {
  AutomationEndpoint,
  AutomationStore,
  DeliveryStatus,
} from '../../store/automation-endpoints.js';

/** One applied change, as the per-record workflow saw it. */
export interface ForwardInput {
  /** Stable per change (the workflow's run and read number): a retry carries the same id. */
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

export function endpointWants(
  endpoint: AutomationEndpoint,
  input: Pick<ForwardInput, 'resource' | 'action' | 'connectionId'>,
): boolean {
  const { resources, actions, connections } = endpoint.filters;
  return (
    endpoint.disabledAt === null &&
    (resources.length === 0 || resources.includes(input.resource)) &&
    (actions.length === 0 || actions.includes(input.action)) &&
    (connections.length === 0 || connections.includes(input.connectionId))
  );
}

/** A retry is answered by these statuses; any other 4xx is the endpoint refusing for good. */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * Automations out: the fresh record, signed as Standard Webhooks, to every endpoint whose
 * filters match. Attempts are this activity's Temporal retries (backoff in the workflow's
 * retry policy); the log remembers what each endpoint took, so a retry sends only to those
 * still owed. An open breaker fails the attempt fast without touching the endpoint.
 */
export function createAutomationActivities(
  store: AutomationStore | undefined,
  breaker: BreakerPolicy = DEFAULT_BREAKER,
) {
  return {
    async forwardChange(input: ForwardInput): Promise<ForwardOutput> {
      const result: ForwardOutput = { delivered: 0, refused: 0 };
      if (!store) return result;
      const attempt = Context.current().info.attempt;
      const owed: string[] = [];
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
      for (const endpoint of await store.list()) {
        if (!endpointWants(endpoint, input)) continue;
        const before = store.logged(input.webhookId, endpoint.name);
        if (before && before.status !== 'failed' && before.status !== 'breaker_open') continue;
        const log = (status: DeliveryStatus, httpStatus: number | null): void =>
          store.log({
            webhookId: input.webhookId,
            endpoint: endpoint.name,
            connectionId: input.connectionId,
            resource: input.resource,
            recordId: input.recordId,
            action: input.action,
            status,
            httpStatus,
            attempts: attempt,
            at: new Date().toISOString(),
          });
        if (!store.admit(endpoint.name, Date.now(), breaker.openMs)) {
          log('breaker_open', null);
          owed.push(endpoint.name);
          continue;
        }
        let status: number | null = null;
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
            timeout: { request: REQUEST_TIMEOUT_MS },
          });
          status = response.statusCode;
        } catch {
          status = null;
        }
        if (status !== null && status >= 200 && status < 300) {
          store.succeeded(endpoint.name);
          log('delivered', status);
          result.delivered += 1;
        } else if (status === 410) {
          store.disable(endpoint.name, 'answered 410 Gone');
          log('gone', status);
          result.refused += 1;
        } else if (status !== null && !retryableStatus(status)) {
          log('rejected', status);
          result.refused += 1;
        } else {
          store.failed(endpoint.name, Date.now(), breaker.threshold, breaker.openMs);
          log('failed', status);
          owed.push(endpoint.name);
        }
      }
      if (owed.length > 0) {
        throw ApplicationFailure.retryable(
          `automation endpoints not reached yet: ${owed.join(', ')}`,
          'AutomationDeliveryFailed',
        );
      }
      return result;
    },
  };
}
