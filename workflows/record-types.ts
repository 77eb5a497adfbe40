import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { Resource } from '../records/canonical.js';

/** One record's changes, applied in order by one workflow (DESIGN decision 3). */
export interface RecordInput {
  connectionId: string;
  destination: string;
  resource: Resource;
  recordId: string;
  /** A notice during a read or this soon after one waits until this long after it. */
  debounceMs: number;
  /** How long the workflow waits for another notice before it ends. */
  idleMs?: number;
  /** Carried across continue-as-new: delivery ids already taken, oldest first. */
  seen?: string[];
  /** Carried across continue-as-new: a notice arrived that is not applied yet. */
  pending?: boolean;
}

/** A notice that the record changed: the delivery id is the dedupe key. */
export interface RecordChange {
  deliveryId: string;
  action: string;
  occurredAt: string | null;
}

export interface RecordSummary {
  reads: number;
  notices: number;
  duplicates: number;
}

export const recordChangeSignal = defineSignal<[RecordChange]>('recordChange');
/** This run's counts: notices taken, duplicates dropped, reads made. */
export const recordSummaryQuery = defineQuery<RecordSummary>('recordSummary');

/** Delivery ids remembered per record: retries of a delivery come within minutes. */
export const SEEN_LIMIT = 256;

/** One workflow per record of a connection: signals for it land in the same place. */
export function recordWorkflowId(
  connectionId: string,
  resource: Resource,
  recordId: string,
): string {
  return `record:${connectionId}:${resource}:${recordId}`;
}

/**
 * A local read found no client at hand without asking the connection workflow: the workflow
 * reads with an ordinary activity instead (the failure type it is told this by).
 */
export const CLIENT_NOT_AT_HAND = 'ClientNotAtHand';
