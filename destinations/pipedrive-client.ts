import got from 'got';
import { REDIRECT_POLICY } from '../config/redirect-policy.js';
import {
  DestinationPausedError,
  DestinationRateLimitedError,
  DestinationUnavailableError,
  DestinationWriteError,
} from './errors.js';
import { RollingWindow } from './rolling-window.js';
import {
  CRM_REQUEST_TIMEOUT_MS,
  jsonBody,
  nextUtcMidnight,
  numericHeader,
  locationOf,
  unusableAnswer,
  serverNow,
  type VendorAnswer,
} from './vendor-answer.js';

const NAMES = {
  vendor: 'Pipedrive',
  token: 'API token',
  setting: 'EBSYNC_PIPEDRIVE_TOKEN',
  urlSetting: 'EBSYNC_PIPEDRIVE_URL',
};

/**
 * Pipedrive over HTTP with got. The official `pipedrive` package answers with the body only
 * (no status, no x-ratelimit-* or x-daily-requests-left headers), and the pacing needs both.
 */

export interface PipedriveClientOptions {
  /** API origin, e.g. https://api.pipedrive.com or https://COMPANY.pipedrive.com (or the fake's). */
  baseUrl: string;
  /** Personal API token (a secret: never in messages). */
  token: string;
}

// https://pipedrive.readme.io/docs/core-api-concepts-rate-limiting — the lowest api_token plan
// allows 20 requests per 2-second window; the first answer's x-ratelimit-limit says the rest.
const FIRST_GUESS = { max: 20, intervalMs: 2_000 };
/** 429s of the 2-second window waited out in place before the activity's retry takes over. */
const IN_PLACE_RETRIES = 3;

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/**
 * Pipedrive refused what one call sent (400 or 422: a value or a link it does not take). On a
 * record's write, the record is refused (reported, tried again next pass) and the rest of the
 * batch goes on; anywhere else, it fails the call as any other write error.
 */
export class PipedriveRefusedError extends DestinationWriteError {
  constructor(
    message: string,
    readonly status: number,
    /** Whether the refused call sent values (a POST or PATCH), not a search or a read. */
    readonly sentValues: boolean,
    /** Pipedrive's own words, without the call: the same for the same cause on any record. */
    readonly reason: string,
  ) {
    super(message);
  }
}

/** Statuses by which Pipedrive refuses the body of one call, not the whole mirror. */
const REFUSED_STATUSES = new Set([400, 422]);

/** The error of an answer that is no success (see PipedriveClient.data). */
function writeError(status: number, call: string, body: unknown): DestinationWriteError {
  const reason = errorOf(body);
  const message = `Pipedrive answered ${status} to ${call}: ${reason}`;
  return REFUSED_STATUSES.has(status)
    ? new PipedriveRefusedError(
        message,
        status,
        call.startsWith('POST ') || call.startsWith('PATCH '),
        reason,
      )
    : new DestinationWriteError(message);
}

function errorOf(body: unknown): string {
  const e = (body as { error?: unknown } | null)?.error;
  return typeof e === 'string' ? e.slice(0, 300) : 'no message';
}

export class PipedriveClient {
  readonly window = new RollingWindow(FIRST_GUESS.max, FIRST_GUESS.intervalMs);
  private readonly http;
  private readonly baseUrl: string;

  constructor(options: PipedriveClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.http = got.extend({
      prefixUrl: this.baseUrl,
      throwHttpErrors: false,
      // The token header and the records in the body are for this origin only.
      ...REDIRECT_POLICY,
      retry: { limit: 0 },
      timeout: { request: CRM_REQUEST_TIMEOUT_MS },
      // https://pipedrive.readme.io/docs/core-api-concepts-authentication — the token in a
      // header keeps it out of URLs (and so out of logs).
      headers: { 'x-api-token': options.token, accept: 'application/json' },
    });
  }

  /** One call, paced; rate limits and failures become the typed errors of errors.ts. */
  async call(
    method: Method,
    path: string,
    options: { json?: unknown; searchParams?: Record<string, string> } = {},
  ): Promise<VendorAnswer> {
    for (let attempt = 0; ; attempt += 1) {
      await this.window.acquire();
      let response;
      try {
        response = await this.http(path.replace(/^\//, ''), {
          method,
          ...(options.json === undefined ? {} : { json: options.json }),
          ...(options.searchParams ? { searchParams: options.searchParams } : {}),
        });
      } catch (error) {
        throw new DestinationUnavailableError(
          `Pipedrive could not be reached (${method} ${path}): ${(error as Error).message}`,
        );
      } finally {
        this.window.release();
      }
      const headers = response.headers as Record<string, unknown>;
      // https://pipedrive.readme.io/docs/core-api-concepts-rate-limiting — x-ratelimit-limit
      // per 2-second window, x-ratelimit-remaining in it, x-ratelimit-reset seconds to its end.
      this.window.learn(
        numericHeader(headers, 'x-ratelimit-limit'),
        FIRST_GUESS.intervalMs,
        numericHeader(headers, 'x-ratelimit-remaining'),
      );
      const body = jsonBody(response.body);
      const status = response.statusCode;
      if (status === 429) {
        // The POST/PUT allowance of the day is spent when x-daily-requests-left reads 0: no
        // write can succeed before midnight UTC, so the pass pauses instead of retrying.
        if (numericHeader(headers, 'x-daily-requests-left') === 0 && method !== 'GET') {
          const resumeAt = nextUtcMidnight(serverNow(headers));
          throw new DestinationPausedError(
            `Pipedrive's daily POST/PUT allowance is spent; the mirror pauses until ${resumeAt}`,
            resumeAt,
          );
        }
        const waitMs = (numericHeader(headers, 'x-ratelimit-reset') ?? 2) * 1000;
        this.window.pauseFor(waitMs);
        if (attempt < IN_PLACE_RETRIES) continue;
        throw new DestinationRateLimitedError(`Pipedrive rate limited ${method} ${path}`, waitMs);
      }
      const unusable = unusableAnswer(NAMES, { status, body }, `${method} ${path}`, errorOf(body), {
        url: this.baseUrl,
        location: locationOf(headers),
      });
      if (unusable) throw unusable;
      return { status, body };
    }
  }

  /** A call that must succeed; returns the envelope's `data`. */
  async data<T>(
    method: Method,
    path: string,
    options: { json?: unknown; searchParams?: Record<string, string> } = {},
  ): Promise<T> {
    const answer = await this.call(method, path, options);
    const envelope = answer.body as { success?: unknown; data?: unknown } | null;
    if (answer.status >= 300 || envelope?.success !== true) {
      throw writeError(answer.status, `${method} ${path}`, answer.body);
    }
    return envelope.data as T;
  }

  /** Whether Pipedrive still has the record at `path` (a GET by id): false on 404. */
  async exists(path: string): Promise<boolean> {
    const answer = await this.call('GET', path);
    if (answer.status === 404) return false;
    if (answer.status >= 300) throw writeError(answer.status, `GET ${path}`, answer.body);
    return true;
  }

  /** PATCHes a record by id: false when Pipedrive no longer has it (404), so it is looked up. */
  async patchIfExists(path: string, json: unknown): Promise<boolean> {
    const answer = await this.call('PATCH', path, { json });
    if (answer.status === 404) return false;
    if (answer.status >= 300) throw writeError(answer.status, `PATCH ${path}`, answer.body);
    return true;
  }
}
