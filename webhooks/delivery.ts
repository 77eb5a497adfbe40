import { z } from 'zod';

/**
 * What a delivery tells the receiver: record X of type T changed. The spec leaves payloads
 * open; this is the hint the sandbox sends (docs/sandbox.md). Unknown fields are kept out,
 * unknown record types are accepted and ignored (the service adds types without notice).
 */
const hintSchema = z.object({
  id: z.string().optional(),
  type: z.string().min(1).max(200),
  occurred_at: z.string().max(64).optional(),
  data: z.object({
    record_type: z.string().min(1).max(100),
    id: z
      .union([z.string(), z.number()])
      .transform(String)
      .pipe(z.string().regex(/^[1-9]\d{0,15}$/)),
    action: z.string().min(1).max(50),
  }),
});

/** Longest delivery id kept (Standard Webhooks' are about 30 characters). */
const MAX_DELIVERY_ID = 200;
const DELIVERY_ID = new RegExp(`^[\\x21-\\x7e]{1,${MAX_DELIVERY_ID}}$`);

/** Mirrored tables by the record type a delivery names. */
const TABLE_OF: Readonly<Record<string, MirroredTable>> = {
  lead: 'leads',
  lead_booking: 'lead_bookings',
  event: 'events',
  event_booking: 'event_bookings',
  appointment: 'appointments',
};
export type MirroredTable =
  'leads' | 'lead_bookings' | 'events' | 'event_bookings' | 'appointments';

/** A verified delivery about a mirrored record: what the receiver stores as a notice. */
export interface Delivery {
  connectionId: string;
  /** The sender's delivery id: retries of one delivery share it (the dedupe key). */
  deliveryId: string;
  resource: MirroredTable;
  recordId: string;
  action: string;
  occurredAt: string | null;
}

/**
 * The id is the dedupe key: an empty one, signed, was stored once, and every later delivery
 * with an empty id was then answered as a duplicate and lost. A header id is checked before
 * its signature too: Node reads header bytes as latin1, so a signature over an id that is not
 * ASCII never matched, and its sender was told the signature was wrong.
 */
export function checkDeliveryId(id: string, from: string): void {
  if (!DELIVERY_ID.test(id)) {
    throw new MalformedDeliveryError(
      `the delivery id (${from}) must be 1 to ${MAX_DELIVERY_ID} characters, printable ASCII without spaces`,
    );
  }
}

/** A body that is not a delivery this receiver understands. */
export class MalformedDeliveryError extends Error {
  override readonly name = 'MalformedDeliveryError';
  readonly retryable = false;
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'the body is not a delivery';
  const at = issue.path.length > 0 ? issue.path.join('.') : 'body';
  return `${at}: ${issue.message}`;
}

/**
 * Parses a verified body. Returns undefined for a record type ebsync does not mirror
 * (expenses, questionnaires): accepted, nothing to do.
 */
export function parseDelivery(
  connectionId: string,
  body: Buffer,
  headerId: string | undefined,
): Delivery | undefined {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new MalformedDeliveryError('the body is not JSON');
  }
  const parsed = hintSchema.safeParse(json);
  if (!parsed.success) {
    throw new MalformedDeliveryError(
      `${describeIssue(parsed.error)} (expected { id, type, data: { record_type, id, action } })`,
    );
  }
  const hint = parsed.data;
  const deliveryId = headerId ?? hint.id;
  if (deliveryId === undefined) {
    throw new MalformedDeliveryError('the delivery has no id (header or body "id")');
  }
  checkDeliveryId(deliveryId, headerId === undefined ? 'body "id"' : 'its header');
  const resource = TABLE_OF[hint.data.record_type];
  if (resource === undefined) return undefined;
  return {
    connectionId,
    deliveryId,
    resource,
    recordId: hint.data.id,
    action: hint.data.action,
    occurredAt: hint.occurred_at ?? null,
  };
}
