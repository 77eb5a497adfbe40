import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Client } from '@hubspot/api-client';
import got, { type Got } from 'got';
import { z } from 'zod';
import {
  DestinationAuthError,
  DestinationPausedError,
  DestinationRateLimitedError,
  DestinationSchemaError,
  DestinationUnavailableError,
  DestinationWriteError,
} from './errors.js';
import { networkCode } from './network-code.js';
import { RollingWindow } from './rolling-window.js';
import {
  CRM_REQUEST_TIMEOUT_MS,
  jsonBody,
  nextUtcMidnight,
  locationOf,
  numericHeader as header,
  unusableAnswer,
  serverNow,
  type VendorAnswer,
} from './vendor-answer.js';

const NAMES = {
  vendor: 'HubSpot',
  token: 'access token',
  setting: 'EBSYNC_HUBSPOT_TOKEN',
  urlSetting: 'EBSYNC_HUBSPOT_URL',
};

/**
 * HubSpot through its official SDK, `@hubspot/api-client`: it takes the API origin as
 * `basePath` (so the fake is reached as the vendor is), and its `…WithHttpInfo` methods give
 * the status and the response headers the pacing reads. The SDK's own retries and its
 * Bottleneck limiter stay off: `numberOfApiCallRetries: 0` adds no retry decorator, and
 * without `limiterOptions` no limiter is made (the SDK only throttles when given those
 * options), because pacing belongs to this client's RollingWindow and retries to Temporal.
 * The SDK sets no request timeout and takes no AbortSignal, so `call` bounds each call itself
 * (the request may go on in the background; its answer is dropped).
 */

export type HubSpotAnswer = VendorAnswer;

export interface HubSpotClientOptions {
  /** API origin, e.g. https://api.hubapi.com (or the fake's). */
  baseUrl: string;
  /** Private-app access token (a secret: never in messages). */
  token: string;
  /** How long one call may take before it fails as unavailable (default 60 s). */
  timeoutMs?: number;
}

/** What an SDK `…WithHttpInfo` method resolves to. */
export interface HttpInfoLike {
  httpStatusCode: number;
  headers: Record<string, string>;
  data: unknown;
}

// Every generated API module of the SDK defines its own ApiException class, so it is
// recognised by shape, never by instanceof. Its message embeds the body and the headers,
// so neither it nor the error is kept: only the status, body and headers are read.
const apiException = z.object({
  code: z.number().int(),
  body: z.unknown(),
  headers: z.record(z.string(), z.unknown()).optional(),
});

// https://developers.hubspot.com/docs/api/usage-details — the burst limit until the first
// answer's X-HubSpot-RateLimit-Max says otherwise (the lowest private-app tier).
const FIRST_GUESS = { max: 100, intervalMs: 10_000 };
/** Short-window 429s waited out in place before the activity's retry takes over. */
const IN_PLACE_RETRIES = 3;

function messageOf(body: unknown): string {
  const m = (body as { message?: unknown } | null)?.message;
  return typeof m === 'string' ? m.slice(0, 300) : 'no message';
}

/** The SDK's call, or a DestinationUnavailableError once `ms` pass without an answer. */
async function withTimeout<T>(sent: Promise<T>, ms: number, name: string): Promise<T> {
  const signal = AbortSignal.timeout(ms);
  let onAbort = (): void => undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    onAbort = () =>
      reject(new DestinationUnavailableError(`HubSpot did not answer ${name} within ${ms} ms`));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([sent, timedOut]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** A portal's clock: its time zone (IANA) when Node knows it, else its offset from UTC. */
export type PortalClock = string | number;

/** How far `zone`'s wall clock is from UTC at `at`, in milliseconds. */
function zoneOffsetMs(zone: string, at: number): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
      .formatToParts(new Date(at))
      .map((p) => [p.type, Number(p.value)]),
  ) as Record<string, number>;
  const wall = Date.UTC(
    parts.year ?? 1970,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
  return wall - Math.floor(at / 1000) * 1000;
}

/**
 * The next midnight on a portal's clock. HubSpot resets the daily limit at midnight in the
 * portal's time zone (https://developers.hubspot.com/apisbytier), not UTC: for a portal in
 * New York that is 05:00 UTC in winter and 04:00 in summer, and a pass resumed at 00:00 UTC
 * would meet the same spent limit and pause for another day. With the zone's name the offset
 * is the one of that midnight, daylight saving included, however long the worker runs.
 */
export function nextPortalMidnight(at: number, clock: PortalClock): string {
  const offsetAt = (t: number) => (typeof clock === 'number' ? clock : zoneOffsetMs(clock, t));
  const local = new Date(at + offsetAt(at));
  const wallMidnight = Date.UTC(
    local.getUTCFullYear(),
    local.getUTCMonth(),
    local.getUTCDate() + 1,
  );
  // The offset at midnight itself, which a change of offset during the day makes another.
  let midnight = wallMidnight - offsetAt(at);
  midnight = wallMidnight - offsetAt(midnight);
  return new Date(midnight).toISOString();
}

/** Whether Node's Intl knows the zone (`US/Eastern`, `Europe/Paris`). */
function knownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

// https://developers.hubspot.com/docs/api-reference/latest/account/account-information/get-account-details
// — the portal's time zone and its offset from UTC now, in milliseconds.
const accountDetails = z.looseObject({
  timeZone: z.string().max(100).optional(),
  utcOffsetMilliseconds: z.number().int().optional(),
});

/** Largest answer read for the portal's clock: a few hundred bytes are expected. */
const MAX_DETAILS_BYTES = 64 * 1024;
const ACCOUNT_DETAILS = '/account-info/v3/details';
/** How long the read after a DAILY refusal may take: the pause waits for it. */
const CLOCK_READ_TIMEOUT_MS = 5_000;

/** The failure of a GET whose answer passed MAX_DETAILS_BYTES (call() reads its code). */
const tooLargeAnswer = (path: string): Error =>
  Object.assign(new Error(`answer of GET ${path} past ${MAX_DETAILS_BYTES} bytes`), {
    code: 'ERR_ANSWER_TOO_LARGE',
  });

/** An answer as it came, before call() reads what it means. */
interface RawAnswer {
  status: number;
  headers: Record<string, unknown>;
  body: unknown;
}

export class HubSpotClient {
  readonly window = new RollingWindow(FIRST_GUESS.max, FIRST_GUESS.intervalMs);
  /** The portal's clock, once learnPortalClock read it; UTC until then. */
  private portalClock: PortalClock | undefined;
  /** The account-info read under way after a DAILY refusal, shared by the calls refused. */
  private clockRead: Promise<void> | undefined;
  /**
   * When a DAILY pause that found the clock unreadable ends (ms, HubSpot's clock). Until
   * then no refusal reads it again: each read costs a call against a spent limit and up to
   * CLOCK_READ_TIMEOUT_MS, and would most likely fail the same way. After it, one may.
   */
  private clockUnreadUntil: number | undefined;
  /**
   * The SDK client, loaded at the first call: the SDK and its dependencies hold about 20 MiB,
   * which a worker that never writes to HubSpot should not carry. Calls go through `call` /
   * `ok`, which pace them and read their answers.
   */
  private sdk: Promise<Client> | undefined;
  private readonly timeoutMs: number;
  /** Plain HTTP for what the SDK has no API for (the account's details). */
  private readonly http: Got;

  constructor(private readonly options: HubSpotClientOptions) {
    this.timeoutMs = options.timeoutMs ?? CRM_REQUEST_TIMEOUT_MS;
    this.http = got.extend({
      prefixUrl: options.baseUrl.replace(/\/+$/, ''),
      // Every status is an answer, read by call() as the SDK's are.
      throwHttpErrors: false,
      // ebsync's redirect rule (config/redirect-policy.ts) allows none off the origin; HubSpot's
      // API does not redirect at all, so, as the SDK's calls, these follow none: a 3xx comes
      // back to call() as the answer it is.
      followRedirect: false,
      retry: { limit: 0 },
      timeout: { request: this.timeoutMs },
      // Bytes as sent, so the cap counts what arrives, not what a small gzip would unpack to.
      decompress: false,
      headers: { authorization: `Bearer ${options.token}`, accept: 'application/json' },
    });
  }

  private loadSdk(): Promise<Client> {
    const basePath = this.options.baseUrl.replace(/\/+$/, '');
    this.sdk ??= import('@hubspot/api-client').then(
      ({ Client: Sdk }) =>
        new Sdk({
          accessToken: this.options.token,
          basePath,
          numberOfApiCallRetries: 0,
          // With an agent the SDK sends through node:http, which follows no redirect; without
          // one it uses fetch, which would send a 307's body (records) to another origin.
          // ebsync's redirect rule (config/redirect-policy.ts) allows none off the origin;
          // HubSpot's API does not redirect, so this client follows none at all.
          httpAgent: basePath.startsWith('https:')
            ? new HttpsAgent({ keepAlive: true })
            : new HttpAgent({ keepAlive: true }),
        }),
    );
    return this.sdk;
  }

  /**
   * One exchange with HubSpot, paced, with no reading of what it means: the status, headers
   * and body of the answer, or a DestinationUnavailableError when none came within `ms`.
   */
  private async exchange(
    name: string,
    send: (sdk: Client) => Promise<HttpInfoLike>,
    ms: number,
  ): Promise<RawAnswer> {
    await this.window.acquire();
    let answer: RawAnswer;
    try {
      const info = await withTimeout(this.loadSdk().then(send), ms, name);
      answer = { status: info.httpStatusCode, headers: info.headers, body: info.data };
    } catch (error) {
      if (error instanceof DestinationUnavailableError) throw error;
      const refused = apiException.safeParse(error);
      if (!refused.success) {
        throw new DestinationUnavailableError(
          `HubSpot could not be reached or answered unreadably (${name}): ${networkCode(error)}`,
        );
      }
      const { code, body, headers = {} } = refused.data;
      answer = { status: code, headers, body };
    } finally {
      this.window.release();
    }
    this.window.learn(
      header(answer.headers, 'x-hubspot-ratelimit-max'),
      header(answer.headers, 'x-hubspot-ratelimit-interval-milliseconds'),
      header(answer.headers, 'x-hubspot-ratelimit-remaining'),
    );
    return answer;
  }

  /**
   * One SDK call, paced; rate limits and failures become the typed errors of errors.ts.
   * `name` (method and path) is what messages call it. Every status comes back as an answer:
   * the SDK throws for the ones its spec does not list (an association 207 among them).
   */
  async call(name: string, send: (sdk: Client) => Promise<HttpInfoLike>): Promise<HubSpotAnswer> {
    for (let attempt = 0; ; attempt += 1) {
      const { status, headers, body } = await this.exchange(name, send, this.timeoutMs);
      if (status === 429) {
        const policy = (body as { policyName?: unknown } | null)?.policyName;
        if (policy === 'DAILY') {
          const now = serverNow(headers);
          // A DAILY refusal before the clock is known (a worker that has not checked the
          // schema since it started, or whose first read failed): one more, short, read. The
          // account-info read itself refused is not asked again: it counts against the limit.
          // Nor is a read that failed for an earlier refusal, until the pause it set is over.
          const failedBefore = this.clockUnreadUntil !== undefined && now < this.clockUnreadUntil;
          if (
            this.portalClock === undefined &&
            name !== `GET ${ACCOUNT_DETAILS}` &&
            !failedBefore
          ) {
            await this.readClockOnce();
          }
          const resumeAt =
            this.portalClock === undefined
              ? nextUtcMidnight(now)
              : nextPortalMidnight(now, this.portalClock);
          if (this.portalClock === undefined) this.clockUnreadUntil = Date.parse(resumeAt);
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
          `HubSpot rate limited ${name} (${String(policy)})`,
          waitMs,
        );
      }
      const unusable = unusableAnswer(NAMES, { status, body }, name, messageOf(body), {
        url: this.options.baseUrl,
        location: locationOf(headers),
      });
      if (unusable) throw unusable;
      return { status, body };
    }
  }

  /**
   * Reads the portal's time zone, so that a DAILY pause ends when HubSpot resets the limit.
   * The SDK has no account-information API, so this is a plain GET on the same origin,
   * following no redirect (as every call of this client). It only informs: a portal that does
   * not say, or cannot be asked now (a 403 for a scope, a fake without the route, an outage, a
   * timeout), leaves the pause at midnight UTC, and the pass goes on. Only the day's limit
   * already spent (a pause) and a token HubSpot refuses stop it, as they would the next call.
   */
  async learnPortalClock(): Promise<void> {
    if (this.portalClock !== undefined) return;
    let answer: HubSpotAnswer;
    try {
      answer = await this.call(`GET ${ACCOUNT_DETAILS}`, () =>
        this.get(ACCOUNT_DETAILS, this.timeoutMs),
      );
    } catch (error) {
      if (error instanceof DestinationPausedError || error instanceof DestinationAuthError) {
        throw error;
      }
      return;
    }
    this.takeClock(answer);
  }

  /** Keeps the clock an account-info answer names, if it names one. */
  private takeClock(answer: { status: number; body: unknown }): void {
    const details = accountDetails.safeParse(answer.body);
    if (answer.status !== 200 || !details.success) return;
    const { timeZone, utcOffsetMilliseconds } = details.data;
    if (timeZone !== undefined && knownZone(timeZone)) this.portalClock = timeZone;
    else if (utcOffsetMilliseconds !== undefined) this.portalClock = utcOffsetMilliseconds;
  }

  /**
   * One account-info read after a DAILY refusal, within CLOCK_READ_TIMEOUT_MS so the pause is
   * not held up: HubSpot may still answer it (its documentation does not say whether it
   * counts against the daily limit). Whatever it answers or fails with only informs; calls
   * refused at once share one read.
   */
  private readClockOnce(): Promise<void> {
    const ms = Math.min(this.timeoutMs, CLOCK_READ_TIMEOUT_MS);
    this.clockRead ??= this.exchange(
      `GET ${ACCOUNT_DETAILS}`,
      () => this.get(ACCOUNT_DETAILS, ms),
      ms,
    )
      .then((answer) => this.takeClock(answer))
      .catch(() => undefined)
      .finally(() => {
        this.clockRead = undefined;
      });
    return this.clockRead;
  }

  /**
   * A GET beside the SDK, with got as ebsync's other plain HTTP calls, answered as the SDK's
   * …WithHttpInfo methods answer, within `ms`. The body is read up to MAX_DETAILS_BYTES only:
   * past that the request is cancelled while downloading, so an endless answer is never held
   * in memory.
   */
  private async get(path: string, ms: number): Promise<HttpInfoLike> {
    const sent = this.http.get(path.replace(/^\/+/, ''), { timeout: { request: ms } });
    let tooLarge = false;
    // on() hands back the same request, awaited below.
    void sent.on('downloadProgress', ({ transferred }: { transferred: number }) => {
      if (transferred > MAX_DETAILS_BYTES && !tooLarge) {
        tooLarge = true;
        sent.cancel();
      }
    });
    let response;
    try {
      response = await sent;
    } catch (error) {
      // got's errors carry the request's options, the token's header among them: only a code
      // goes on (call() reads nothing else).
      if (tooLarge) throw tooLargeAnswer(path);
      throw Object.assign(new Error(`GET ${path} failed`), { code: networkCode(error) });
    }
    // A cancel that came after got had the whole body leaves an answer past the cap: not used.
    if (tooLarge || response.rawBody.length > MAX_DETAILS_BYTES) throw tooLargeAnswer(path);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(response.headers)) {
      if (typeof value === 'string') headers[name] = value;
    }
    return { httpStatusCode: response.statusCode, headers, data: jsonBody(response.body) };
  }

  /** A call that must answer 2xx; anything else is a write error naming HubSpot's reason. */
  async ok(name: string, send: (sdk: Client) => Promise<HttpInfoLike>): Promise<HubSpotAnswer> {
    const answer = await this.call(name, send);
    if (answer.status >= 300) throw hubspotRefusal(answer, name);
    return answer;
  }
}

/**
 * HubSpot's refusal of a call, in one line with its status and reason. A 403 is the private
 * app's scopes (https://developers.hubspot.com/docs/api/scopes), which the line points to,
 * naming `scope` when the caller knows the one the call needs.
 */
export function hubspotRefusal(
  answer: HubSpotAnswer,
  name: string,
  scope?: string,
): DestinationWriteError {
  const scopes =
    answer.status !== 403
      ? ''
      : scope
        ? `: the private app needs the scope ${scope} (docs/crm.md, HubSpot setup)`
        : " (the private app's scopes: see docs/crm.md, HubSpot setup)";
  return new DestinationWriteError(
    `HubSpot answered ${answer.status} to ${name}: ${messageOf(answer.body)}${scopes}`,
  );
}

/** A key property made without unique values: HubSpot never adds them later. */
export const notUnique = (name: string): DestinationSchemaError =>
  new DestinationSchemaError(
    `HubSpot deal property ${name} exists without unique values, which HubSpot cannot change: delete it in HubSpot, then run 'ebsync destinations setup hubspot'`,
  );
