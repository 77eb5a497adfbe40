/**
 * The one redirect rule of ebsync's outgoing HTTP (the service client and its OAuth calls, the
 * CRM clients, the automation forwarder, the CLI's call to the sandbox's admin API): a
 * redirect is followed only within the origin the request was sent to (same scheme, host and
 * port). Every such request carries something meant for that origin alone (an API key or a
 * bearer token in a header, a form with a client secret and a refresh token, a signed body of
 * customer data), and HTTP clients send custom headers again, and after a 307 or 308 the body
 * too, to wherever Location points. A redirect elsewhere comes back to the caller as the 3xx
 * answer it is, and redirectRefusal() says it in one line.
 */

/** Hops followed at most, all on the first request's origin. */
export const MAX_REDIRECTS = 5;

function originOf(url: string | URL): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** The absolute URL a Location header names, resolved against the request's URL. */
export function redirectTarget(from: string | URL, location: string): URL | undefined {
  try {
    return new URL(location, from);
  } catch {
    return undefined;
  }
}

/** Whether a redirect from `from` to `location` stays on `from`'s origin. */
export function staysOnOrigin(from: string | URL, location: string | undefined): boolean {
  if (location === undefined) return false;
  const target = redirectTarget(from, location);
  const home = originOf(from);
  return target !== undefined && home !== undefined && home !== 'null' && target.origin === home;
}

/** What got hands its followRedirect function: the answer to the hop just made. */
interface RedirectAnswer {
  /** The URL of the request this is the answer to. */
  url: string;
  headers: { location?: string | undefined };
}

/**
 * got's options for the rule: each hop is checked against the one before it, so a chain of
 * hops stays on the first request's origin.
 */
export const REDIRECT_POLICY = {
  followRedirect: (answer: RedirectAnswer): boolean =>
    staysOnOrigin(answer.url, answer.headers.location),
  maxRedirects: MAX_REDIRECTS,
} as const;

/** How redirectRefusal says it. */
export interface RefusalWording {
  /**
   * Name no address, not even an origin: for a line a log keeps beside the caller's own name,
   * whose URL may carry a token (the automation forwarder's delivery log).
   */
  readonly anonymous?: boolean;
  /** What the request carries that is its origin's alone (the line's reason). */
  readonly carries?: string;
}

/**
 * One line for a 3xx answer the rule did not follow, or undefined for any other status: a
 * redirect off the request's origin (named by its origin only: a Location may carry a token),
 * one with no Location, or one within the origin that the client did not follow (got follows
 * those but for a 305 or 306; the HubSpot client follows none).
 */
export function redirectRefusal(
  status: number,
  from: string | URL,
  location: string | undefined,
  wording: RefusalWording = {},
): string | undefined {
  if (status < 300 || status >= 400) return undefined;
  const target = location === undefined ? undefined : redirectTarget(from, location);
  if (target === undefined) return `answered ${status}, a redirect with no Location to follow`;
  if (staysOnOrigin(from, location)) {
    // A client that follows none (HubSpot's), or a status got follows nowhere (305, 306).
    const origin = wording.anonymous === true ? 'its origin' : target.origin;
    return `answered ${status}, a redirect within ${origin} that this client does not follow`;
  }
  const where = wording.anonymous === true ? 'another origin' : target.origin;
  const carries =
    wording.carries ?? `its requests carry credentials for ${originOf(from) ?? String(from)} only`;
  return `answered ${status}, a redirect to ${where}, which ebsync does not follow: ${carries}`;
}
