import { POSTGRES_URL_FORM } from '../config/database-locations.js';

/**
 * Redaction of secrets before anything is logged. Two nets: keys whose name says "secret"
 * (authorization, api key, token, password...) have their values replaced wholesale, and
 * string values anywhere are scrubbed of credential shapes (Bearer tokens, ik_ keys, the
 * eat_/ert_/eac_/adm_/whsec_ values the service issues, HubSpot pat- tokens, Salesforce
 * sessions, codes in callback URLs) and of values after a secret name (`api_token=…`,
 * `"secret":"…"`, `x-api-token: …`), so a secret that ends up inside a message or an error
 * text is caught too.
 */
export const REDACTED = '[redacted]';

/** `//USER:PASSWORD@` of the URL form messages show: a template, not a credential. */
const TEMPLATE_USERINFO = /\/\/[^@]*@/.exec(POSTGRES_URL_FORM)?.[0];

/** Names that hold a credential whole. */
const SECRET_KEY =
  /^(authorization|proxy-authorization|cookie|set-cookie|api[-_]?key|x-api-key|password|passwd|code[-_]?verifier|private[-_]?key|encryption[-_]?key)$/i;
/**
 * Name endings that do: `*secret` (client_secret, webhookSecret), `*token` (access_token,
 * x-admin-token, csrftoken), `*_keys` / `*Keys` (encryption_keys, signingKeys).
 * tokenCount and keyId end otherwise and stay readable.
 */
const SECRET_KEY_ENDINGS: readonly RegExp[] = [
  /secret$/i,
  /token$/i,
  /password$/i,
  /(?:^|[-_.])keys$/i,
  /[a-z0-9]Keys$/,
];

/** Credentials the service (and the sandbox) issue carry these prefixes. */
const TOKEN_CHARS = '[A-Za-z0-9_-]';

/**
 * A word after "Bearer"; a dot that ends a sentence stays outside it. `!` belongs to the
 * word: a Salesforce session is `<org id>!<secret>`, and its second half is the secret.
 */
const BEARER = /\b(bearer)\s+([A-Za-z0-9._~+/=!-]*[A-Za-z0-9_~+/=-])/gi;
/** The text before a match ends in an Authorization header or member name. */
const AFTER_AUTHORIZATION = /authorization["']?\s*[:=]\s*["']?$/i;
/** What prose lacks and tokens have: a digit, or `._~+/=!` inside the word. */
const TOKEN_SIGN = /[0-9._~+/=!]/;
/**
 * Outside a header, a word shorter than this is prose ("a bearer 2fa token"): no credential
 * ebsync meets is that short, and in a header every word after Bearer goes regardless.
 */
const SHORT_WORD = 6;
/** Tokens this long are credentials even without a digit or sign; English words rarely are. */
const LONG_TOKEN = 16;

/**
 * Whether the word after "Bearer" is a credential: always in an Authorization header, and
 * elsewhere when it looks like a token, so prose such as "for the JWT bearer flow" or "a
 * bearer 2fa token" (from setting names and error texts) keeps its words.
 */
function isBearerToken(word: string, before: string): boolean {
  if (AFTER_AUTHORIZATION.test(before)) return true;
  return word.length >= LONG_TOKEN || (word.length >= SHORT_WORD && TOKEN_SIGN.test(word));
}

/** Credentials recognised by their shape alone, wherever they stand. */
const CREDENTIAL_SHAPES: readonly RegExp[] = [
  // Access and refresh tokens, authorization codes, admin tokens: not inside a word, so
  // "great_success" keeps its eat_.
  new RegExp(`(?<![A-Za-z0-9])(?:eat|ert|eac|adm)_${TOKEN_CHARS}{8,}`, 'g'),
  // Webhook secrets are standard base64.
  /(?<![A-Za-z0-9])whsec_[A-Za-z0-9+/]{8,}={0,2}/g,
  // Integration keys, also glued to a name (EBS_API_KEY_ik_...): short ones only at a word start.
  new RegExp(`\\bik_${TOKEN_CHARS}+|ik_${TOKEN_CHARS}{8,}`, 'g'),
  // https://developers.hubspot.com/docs/api/private-apps — private app tokens: pat-<region>-<uuid>.
  /(?<![A-Za-z0-9])pat-[a-z]{2,3}[0-9]-[A-Za-z0-9-]{8,}/g,
  // A Salesforce session id: the org id (00D + 12 or 15 characters), `!`, and the secret.
  /(?<![A-Za-z0-9])00D[A-Za-z0-9]{12,15}![A-Za-z0-9._~+/=-]+/g,
];

/**
 * A name, then `=` or (for a header-shaped name: one with `-` or `_`) `:`, then a value.
 * The name decides, by the same rule as an object's keys (isSecretKey): api_token=,
 * password=, EBSYNC_ADMIN_TOKEN=, x-api-token: are secrets; tokenCount=3 and keyId=k1 are not.
 */
const NAMED_VALUE = /(?<![A-Za-z0-9_.-])([A-Za-z][A-Za-z0-9_.-]*)(\s*=\s*|\s*:\s+)([^&\s"',;]+)/g;
/** The same as a JSON member: `"secret": "…"`, whatever the value holds. */
const NAMED_MEMBER = /"([A-Za-z][A-Za-z0-9_.-]*)"(\s*:\s*)"((?:[^"\\]|\\.)*)"/g;
/** Words that start a credential rather than being one (`Authorization: Bearer …`). */
const SCHEME_WORD = /^(bearer|basic)$/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) || SECRET_KEY_ENDINGS.some((ending) => ending.test(key));
}

function namedValue(match: string, name: string, separator: string, value: string): string {
  if (!isSecretKey(name) || value.includes(REDACTED) || SCHEME_WORD.test(value)) return match;
  // `name: value` only for header-shaped names: "token: expired" is prose.
  if (separator.includes(':') && !/[-_]/.test(name)) return match;
  return `${name}${separator}${REDACTED}`;
}

export function scrubText(text: string): string {
  let out = text.replace(
    BEARER,
    (match: string, bearer: string, word: string, offset: number, whole: string) =>
      isBearerToken(word, whole.slice(0, offset)) ? `${bearer} ${REDACTED}` : match,
  );
  // Basic credentials are base64 of user:password; "the basic plan" is not one.
  out = out.replace(/\b(Basic)\s+[A-Za-z0-9+/]{8,}={0,2}/g, `$1 ${REDACTED}`);
  for (const shape of CREDENTIAL_SHAPES) out = out.replace(shape, REDACTED);
  out = out.replace(
    NAMED_MEMBER,
    (match: string, name: string, separator: string, value: string) =>
      isSecretKey(name) && !value.includes(REDACTED) ? `"${name}"${separator}"${REDACTED}"` : match,
  );
  out = out.replace(NAMED_VALUE, namedValue);
  // The authorization code in a callback URL's query or fragment ("code" alone is no secret name).
  out = out.replace(/([?&#])(code)=([^&#\s"']+)/g, `$1$2=${REDACTED}`);
  // Credentials inside a URL: https://user:secret@host; not the form messages name as allowed.
  return out.replace(/(\/\/[^/\s:@]+):([^@\s/]+)@/g, (match: string, head: string) =>
    match === TEMPLATE_USERINFO ? match : `${head}:${REDACTED}@`,
  );
}

/**
 * An e-mail address: the customer data that error texts quote most (a destination's refusal
 * of a row, a CRM's of a contact). Its name starts a word (not after `//`, so the user of a
 * URL stays) and holds a letter (not the `pid@host` of a worker's identity); its domain ends
 * in letters (not 127.0.0.1).
 */
const EMAIL =
  /(?<![A-Za-z0-9._%+\-/])(?=[A-Za-z0-9._%+-]*[A-Za-z])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
/** A phone number written internationally (+1 555 010 2030) or as (555) 010-2030. */
const PHONE = /\+\d[\d\s().-]{5,}\d|\(\d{3}\)\s?\d{3}[-.\s]\d{4}/g;

/**
 * Text with the customer data a refusal may quote (e-mails, phones) masked: in every log line,
 * and in the status page, which anyone who reaches it reads. A command's own answer (scrubText
 * alone) keeps them: it names the record its user asked about, where a log is kept, shipped and
 * read by others.
 */
export function withoutCustomerData(text: string): string {
  return text.replace(EMAIL, '[e-mail]').replace(PHONE, '[phone]');
}

/** A text for a log line: no credential (scrubText) and no customer data (withoutCustomerData). */
export function scrubLogText(text: string): string {
  return withoutCustomerData(scrubText(text));
}

/**
 * Deep copy of a value with secrets and customer data removed, for a log line; cycles and depth are bounded. `seen` holds the
 * ancestors of the value only, so an object referenced twice (not a cycle) prints twice.
 */
export function redact(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value !== 'object' || value === null) return redactValue(value, depth, seen);
  if (seen.has(value)) return '[circular]';
  seen.add(value);
  try {
    return redactValue(value, depth, seen);
  } finally {
    seen.delete(value);
  }
}

function redactValue(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value === 'string') return scrubLogText(value);
  if (typeof value !== 'object' || value === null) return value;
  if (depth > 12) return '[depth limit]';
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1, seen));
  if (value instanceof Error) {
    const out: Record<string, unknown> = {
      type: value.name,
      message: scrubLogText(value.message),
    };
    if (value.stack) out.stack = scrubLogText(value.stack);
    for (const [key, item] of Object.entries(value)) {
      // An enumerable cause (Temporal's failures have one) is handled once, below.
      if (key === 'cause') continue;
      out[key] = isSecretKey(key) ? REDACTED : redact(item, depth + 1, seen);
    }
    if (value.cause !== undefined) out.cause = redact(value.cause, depth + 1, seen);
    return out;
  }
  if (value instanceof Map) {
    return redact(Object.fromEntries(value), depth + 1, seen);
  }
  if (value instanceof Date || value instanceof URL) return scrubLogText(value.toString());
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] =
      isSecretKey(key) && item !== null && item !== undefined
        ? REDACTED
        : redact(item, depth + 1, seen);
  }
  return out;
}
