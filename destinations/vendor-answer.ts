/** What CRM clients read from a vendor's HTTP answer, the same way for every vendor. */

import { redirectRefusal } from '../config/redirect-policy.js';
import {
  DestinationAuthError,
  DestinationTargetError,
  DestinationUnavailableError,
} from './errors.js';

/** How long one CRM request may take before it counts as a transient failure (HubSpot, Pipedrive). */
export const CRM_REQUEST_TIMEOUT_MS = 60_000;

export interface VendorAnswer {
  status: number;
  body: unknown;
}

/** A numeric header, or undefined when absent or not a number. */
export function numericHeader(headers: Record<string, unknown>, name: string): number | undefined {
  const value = headers[name];
  const n = typeof value === 'string' ? Number(value) : NaN;
  return Number.isFinite(n) ? n : undefined;
}

/** The body as JSON, or null (an empty or non-JSON answer). */
export function jsonBody(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** Daily vendor limits reset at midnight UTC (HubSpot's fake, Pipedrive's POST/PUT allowance). */
export function nextUtcMidnight(at: number): string {
  const d = new Date(at);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)).toISOString();
}

/** The vendor's clock from its Date header, else ours. */
export function serverNow(headers: Record<string, unknown>): number {
  const at = Date.parse(typeof headers.date === 'string' ? headers.date : '');
  return Number.isNaN(at) ? Date.now() : at;
}

/**
 * How a vendor's refusals read: its name, what its token is called and where it is set, and
 * the setting of its address.
 */
export interface VendorNames {
  vendor: string;
  token: string;
  setting: string;
  urlSetting: string;
}

/** Where a call went and where a 3xx answer to it pointed (config/redirect-policy.ts). */
export interface CallTarget {
  /** The origin (or any URL on it) the call was sent to. */
  url: string;
  /** The answer's Location header, if any. */
  location?: string | undefined;
}

/** The Location header of an answer, when it has one. */
export function locationOf(headers: Record<string, unknown>): string | undefined {
  return typeof headers.location === 'string' ? headers.location : undefined;
}

/**
 * The answers no call of any vendor can use: a refused token (fix the setting, no retry), a
 * redirect the redirect policy did not follow (fix the address, no retry) and a server error
 * (retryable). Undefined for every other answer, which the caller reads.
 */
export function unusableAnswer(
  names: VendorNames,
  answer: VendorAnswer,
  call: string,
  detail: string,
  target: CallTarget,
): Error | undefined {
  const redirect = redirectRefusal(answer.status, target.url, target.location);
  if (redirect) {
    return new DestinationTargetError(
      `${names.vendor} ${redirect} (${call}): check ${names.urlSetting}`,
    );
  }
  if (answer.status === 401) {
    return new DestinationAuthError(
      `${names.vendor} refused the ${names.token} (401): set a valid one in ${names.setting}`,
    );
  }
  if (answer.status >= 500) {
    return new DestinationUnavailableError(
      `${names.vendor} answered ${answer.status} to ${call}: ${detail}`,
    );
  }
  return undefined;
}
