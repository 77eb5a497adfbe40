import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { SandboxContext } from './context.js';
import { sql, type Change } from './db.js';
import { FieldErrors } from './errors.js';

/**
 * Outgoing webhooks, signed per Standard Webhooks (webhook-id, webhook-timestamp,
 * webhook-signature "v1,<base64 HMAC-SHA256>"). The spec leaves payloads open; ours is a
 * hint, not the record, because receivers re-read the record on notify:
 *
 *   { id: 'evt_…', type: '<record type>.<created|updated|deleted>', occurred_at: ISO,
 *     business_id, data: { record_type, id: '<record id>', action } }
 *
 * Each endpoint has its own queue: deliveries to one endpoint arrive in change order, and a
 * failing endpoint retries (exponential backoff, capped) without holding up the others.
 */

/** Record types whose changes are announced; everything else (catalog, questions) is not. */
export const WEBHOOK_RECORD_TYPES = [
  'lead',
  'lead_booking',
  'event',
  'event_booking',
  'appointment',
  'expense',
  'questionnaire',
] as const;

/** Key bytes a chosen signing secret must carry at the least (generated ones carry 24). */
export const MIN_SECRET_BYTES = 24;
const SECRET_SHAPE = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

/** Why a chosen signing secret is refused, or undefined when it is fine. */
export function webhookSecretProblem(secret: string): string | undefined {
  const base64 = SECRET_SHAPE.exec(secret)?.[1];
  if (base64 === undefined || base64.length % 4 !== 0) {
    return 'must be whsec_ followed by base64';
  }
  const bytes = Buffer.from(base64, 'base64').length;
  return bytes < MIN_SECRET_BYTES
    ? `must carry at least ${MIN_SECRET_BYTES} bytes of key (this one has ${bytes})`
    : undefined;
}

export interface WebhookOptions {
  /** Attempts per message, the first included. */
  maxAttempts: number;
  /** Per-attempt timeout. */
  timeoutMs: number;
  /** Wait before the second attempt; doubles each time up to backoffCapMs. */
  backoffMs: number;
  backoffCapMs: number;
  /** How many attempts the delivery log keeps. */
  logSize: number;
}

export const DEFAULT_WEBHOOK_OPTIONS: WebhookOptions = {
  maxAttempts: 5,
  timeoutMs: 5_000,
  backoffMs: 500,
  backoffCapMs: 30_000,
  logSize: 200,
};

export interface WebhookEndpoint {
  id: number;
  business_id: number;
  url: string;
  /** whsec_<base64>: what the receiver verifies with. */
  secret: string;
  /** Record types announced to this endpoint; null: all of WEBHOOK_RECORD_TYPES. */
  types: string[] | null;
  created_at: string;
}

export interface WebhookPayload {
  id: string;
  type: string;
  occurred_at: string;
  business_id: number;
  data: { record_type: string; id: string; action: Change['action'] };
}

export interface DeliveryAttempt {
  endpoint_id: number;
  message_id: string;
  event_type: string;
  attempt: number;
  /** delivered; failed (will retry); gave_up (last attempt failed). */
  outcome: 'delivered' | 'failed' | 'gave_up';
  http_status: number | null;
  error: string | null;
  duration_ms: number;
  at: string;
}

interface EndpointRow {
  id: number;
  business_id: number;
  url: string;
  secret: string;
  types: string | null;
  created_at: string;
  disabled_at: string | null;
}

const ANNOUNCED = new Set<string>(WEBHOOK_RECORD_TYPES);

function fromRow(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    business_id: row.business_id,
    url: row.url,
    secret: row.secret,
    types: row.types === null ? null : (JSON.parse(row.types) as string[]),
    created_at: row.created_at,
  };
}

interface Queue {
  messages: WebhookPayload[];
  running: Promise<void> | undefined;
}

export class WebhookDispatcher {
  readonly options: WebhookOptions;
  private readonly queues = new Map<number, Queue>();
  private readonly log: DeliveryAttempt[] = [];
  private readonly inFlight = new Set<AbortController>();
  private readonly sleeps = new Set<() => void>();
  private unsubscribe: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly ctx: SandboxContext,
    options: Partial<WebhookOptions> = {},
  ) {
    this.options = { ...DEFAULT_WEBHOOK_OPTIONS, ...options };
  }

  start(): void {
    this.unsubscribe ??= this.ctx.records.onChange((change) => this.enqueue(change));
  }

  /** Stops listening, abandons pending retries and aborts requests in flight. */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    for (const controller of this.inFlight) controller.abort();
    for (const wake of this.sleeps) wake();
    await Promise.allSettled(this.running());
  }

  addEndpoint(input: {
    businessId: number;
    url: string;
    types?: readonly string[] | null;
    secret?: string;
  }): WebhookEndpoint {
    const problem = input.secret === undefined ? undefined : webhookSecretProblem(input.secret);
    if (problem) new FieldErrors().add('secret', problem).throwIfAny();
    const secret = input.secret ?? `whsec_${randomBytes(MIN_SECRET_BYTES).toString('base64')}`;
    const info = this.ctx.db
      .prepare(
        'INSERT INTO webhook_endpoints (business_id, url, secret, types, created_at) VALUES (?, ?, ?, ?, ?)',
      )
      .run(
        input.businessId,
        input.url,
        secret,
        input.types ? JSON.stringify([...new Set(input.types)]) : null,
        this.ctx.clock.iso(),
      );
    const endpoint = this.endpoint(Number(info.lastInsertRowid));
    if (!endpoint) throw new Error('the endpoint just created is missing');
    return endpoint;
  }

  /** A live endpoint, or undefined when unknown or deleted. */
  endpoint(id: number): WebhookEndpoint | undefined {
    const row = this.ctx.db
      .prepare('SELECT * FROM webhook_endpoints WHERE id = ? AND disabled_at IS NULL')
      .get(id) as EndpointRow | undefined;
    return row ? fromRow(row) : undefined;
  }

  endpoints(businessId?: number): WebhookEndpoint[] {
    // sql(): every record change asks, and preparing cost ~100 µs a write.
    const rows = sql(
      this.ctx.db,
      'SELECT * FROM webhook_endpoints WHERE disabled_at IS NULL AND (@business IS NULL OR business_id = @business) ORDER BY id',
    ).all({ business: businessId ?? null }) as EndpointRow[];
    return rows.map(fromRow);
  }

  /** Stops deliveries to an endpoint, queued ones included. False when unknown. */
  deleteEndpoint(id: number): boolean {
    const changed = this.ctx.db
      .prepare('UPDATE webhook_endpoints SET disabled_at = ? WHERE id = ? AND disabled_at IS NULL')
      .run(this.ctx.clock.iso(), id).changes;
    const queue = this.queues.get(id);
    if (queue) queue.messages.length = 0;
    return changed > 0;
  }

  /** The most recent attempts, newest last. */
  deliveries(filter: { endpointId?: number; limit?: number } = {}): DeliveryAttempt[] {
    const matching =
      filter.endpointId === undefined
        ? this.log
        : this.log.filter((a) => a.endpoint_id === filter.endpointId);
    return matching.slice(-(filter.limit ?? this.options.logSize));
  }

  /** Resolves once every queue is empty: lets tests wait instead of sleeping. */
  async idle(): Promise<void> {
    for (;;) {
      const running = this.running();
      if (running.length === 0) return;
      await Promise.allSettled(running);
    }
  }

  private running(): Promise<void>[] {
    const out: Promise<void>[] = [];
    for (const queue of this.queues.values()) if (queue.running) out.push(queue.running);
    return out;
  }

  private enqueue(change: Change): void {
    if (this.closed || !ANNOUNCED.has(change.type)) return;
    for (const endpoint of this.endpoints(change.businessId)) {
      if (endpoint.types && !endpoint.types.includes(change.type)) continue;
      let queue = this.queues.get(endpoint.id);
      if (!queue) {
        queue = { messages: [], running: undefined };
        this.queues.set(endpoint.id, queue);
      }
      queue.messages.push({
        // Each endpoint gets its own message id: they are separate deliveries.
        id: `evt_${randomBytes(12).toString('hex')}`,
        type: `${change.type}.${change.action}`,
        occurred_at: change.occurredAt,
        business_id: change.businessId,
        data: { record_type: change.type, id: String(change.id), action: change.action },
      });
      this.kick(endpoint.id, queue);
    }
  }

  private kick(endpointId: number, queue: Queue): void {
    if (queue.running) return;
    queue.running = this.drain(endpointId, queue).finally(() => {
      queue.running = undefined;
      // A message queued while the drain was finishing would otherwise wait for the next one.
      if (queue.messages.length > 0 && !this.closed) this.kick(endpointId, queue);
    });
  }

  private async drain(endpointId: number, queue: Queue): Promise<void> {
    for (let message = queue.messages.shift(); message; message = queue.messages.shift()) {
      if (this.closed) return;
      await this.deliver(endpointId, message);
    }
  }

  private async deliver(endpointId: number, message: WebhookPayload): Promise<void> {
    const body = JSON.stringify(message);
    for (let attempt = 1; attempt <= this.options.maxAttempts; attempt += 1) {
      const endpoint = this.endpoint(endpointId);
      if (!endpoint || this.closed) return;
      const started = Date.now();
      // Standard Webhooks timestamps are checked against the receiver's real clock.
      const sentAt = new Date();
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'ebs-sandbox-webhooks/1',
        'webhook-id': message.id,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': new Webhook(endpoint.secret).sign(message.id, sentAt, body),
      };
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), this.options.timeoutMs);
      this.inFlight.add(controller);
      let status: number | null = null;
      let error: string | null = null;
      try {
        const response = await fetch(endpoint.url, {
          method: 'POST',
          headers,
          body,
          redirect: 'manual',
          signal: controller.signal,
        });
        status = response.status;
        await response.body?.cancel();
      } catch (e) {
        error = controller.signal.aborted
          ? this.closed
            ? 'aborted: sandbox closing'
            : `timeout after ${this.options.timeoutMs} ms`
          : describe(e);
      } finally {
        clearTimeout(timer);
        this.inFlight.delete(controller);
      }
      this.ctx.counters.webhookAttempts += 1;
      const delivered = status !== null && status >= 200 && status < 300;
      const last = attempt === this.options.maxAttempts;
      this.record({
        endpoint_id: endpointId,
        message_id: message.id,
        event_type: message.type,
        attempt,
        outcome: delivered ? 'delivered' : last ? 'gave_up' : 'failed',
        http_status: status,
        error: error ?? (delivered ? null : `HTTP ${status}`),
        duration_ms: Date.now() - started,
        at: new Date().toISOString(),
      });
      if (delivered) {
        this.ctx.counters.webhookDeliveries += 1;
        return;
      }
      if (last) {
        this.ctx.counters.webhookFailures += 1;
        return;
      }
      const wait = Math.min(this.options.backoffMs * 2 ** (attempt - 1), this.options.backoffCapMs);
      await this.sleep(wait);
    }
  }

  private record(attempt: DeliveryAttempt): void {
    this.log.push(attempt);
    if (this.log.length > this.options.logSize)
      this.log.splice(0, this.log.length - this.options.logSize);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sleeps.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleeps.add(wake);
    });
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    return `${error.message}${detail}`.slice(0, 300);
  }
  return String(error).slice(0, 300);
}
