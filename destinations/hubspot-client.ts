import got from 'got';
import {
  DestinationPausedError,
  DestinationRateLimitedError,
  DestinationUnavailableError,
  DestinationWriteError,
} from './errors.js';
import { RollingWindow } from './rolling-window.js';
import {
  jsonBody,
  nextUtcMidnight,
  numericHeader as header,
  unusableAnswer,
  serverNow,
  type VendorAnswer,
} from './vendor-answer.js';

const NAMES = {
  vendor: 'HubSpot',
  token: 'access token',
  setting: 'EBSYNC_HUBSPOT_TOKEN',
};

/**
 * HubSpot over HTTP with got. The issue prefers `@hubspot/api-client` (it takes a basePath
 * and exposes headers), but it is not a dependency of ebsync yet; got gives the status and
 * the rate headers the pacing needs either way.
 */

export type HubSpotAnswer = VendorAnswer;

export interface HubSpotClientOptions {
  /** API origin, e.g. https://api.hubapi.com (or the fake's). */
  baseUrl: string;
  /** Private-app access token (a secret: never in messages). */
  token: string;
}

// https://developers.hubspot.com/docs/api/usage-details — the burst limit until the first
// answer's X-HubSpot-RateLimit-Max says otherwise (the lowest private-app tier).
const FIRST_GUESS = { max: 100, intervalMs: 10_000 };
/** Short-window 429s waited out in place before the activity's retry takes over. */
const IN_PLACE_RETRIES = 3;

function messageOf(body: unknown): string {
  const m = (body as { message?: unknown } | null)?.message;
  return typeof m === 'string' ? m.slice(0, 300) : 'no message';
}

export class HubSpotClient {
  readonly window = new RollingWindow(FIRST_GUESS.max, FIRST_GUESS.intervalMs);
  private readonly http;

  constructor(private readonly options: HubSpotClientOptions) {
    this.http = got.extend({
      prefixUrl: options.baseUrl.replace(/\/+$/, ''),
      throwHttpErrors: false,
      retry: { limit: 0 },
      timeout: { request: 60_000 },
      headers: { authorization: `Bearer ${options.token}`, accept: 'application/json' },
    });
  }

  /** One call, paced; rate limits and failures become the typed errors of errors.ts. */
  async call(
    method: 'GET' | 'POST' | 'PATCH',
    path: string,
    json?: unknown,
  ): Promise<HubSpotAnswer> {
    for (let attempt = 0; ; attempt += 1) {
      await this.window.acquire();
      let response;
      try {
        response = await this.http(path.replace(/^\//, ''), {
          method,
          ...(json === undefined ? {} : { json }),
        });
      } catch (error) {
        throw new DestinationUnavailableError(
          `HubSpot could not be reached (${method} ${path}): ${(error as Error).message}`,
        );
      } finally {
        this.window.release();
      }
      const headers = response.headers as Record<string, unknown>;
      this.window.learn(
        header(headers, 'x-hubspot-ratelimit-max'),
        header(headers, 'x-hubspot-ratelimit-interval-milliseconds'),
        header(headers, 'x-hubspot-ratelimit-remaining'),
      );
      const body = jsonBody(response.body);
      const status = response.statusCode;
      if (status === 429) {
        const policy = (body as { policyName?: unknown } | null)?.policyName;
        if (policy === 'DAILY') {
          const resumeAt = nextUtcMidnight(serverNow(headers));
          throw new DestinationPausedError(
            `HubSpot's daily API limit is spent; the mirror pauses until ${resumeAt}`,
            resumeAt,
          );
        }
        // TEN_SECONDLY_ROLLING (or the search limit): the window frees up within its length.
        const waitMs = this.window.windowMs;
        this.window.pauseFor(waitMs);
        if (attempt < IN_PLACE_RETRIES) continue;
        throw new DestinationRateLimitedError(
          `HubSpot rate limited ${method} ${path} (${String(policy)})`,
          waitMs,
        );
      }
      const unusable = unusableAnswer(
        NAMES,
        { status, body },
        `${method} ${path}`,
        messageOf(body),
      );
      if (unusable) throw unusable;
      return { status, body };
    }
  }

  /** A call that must answer 2xx; anything else is a write error naming HubSpot's reason. */
  async ok(method: 'GET' | 'POST' | 'PATCH', path: string, json?: unknown): Promise<HubSpotAnswer> {
    const answer = await this.call(method, path, json);
    if (answer.status >= 300) {
      throw new DestinationWriteError(
        `HubSpot answered ${answer.status} to ${method} ${path}: ${messageOf(answer.body)}`,
      );
    }
    return answer;
  }
}
