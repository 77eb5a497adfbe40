/**
 * Redaction of secrets before anything is logged. Two nets: keys whose name says "secret"
 * (authorization, api key, token, password...) have their values replaced wholesale, and
 * string values anywhere are scrubbed of credential shapes (Bearer tokens, ik_ keys, the
 * eat_/ert_/eac_/adm_/whsec_ values the service issues, codes in callback URLs), so a
 * secret that ends up inside a message or an error text is caught too.
 */
export const REDACTED = '[redacted]';

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

/** A word after "Bearer"; a dot that ends a sentence stays outside it. */
const BEARER = /\b(bearer)\s+([A-Za-z0-9._~+/=-]*[A-Za-z0-9_~+/=-])/gi;
/** The text before a match ends in an Authorization header or member name. */
const AFTER_AUTHORIZATION = /authorization["']?\s*[:=]\s*["']?$/i;
/** What prose lacks and tokens have: a digit, or `._~+/=` inside the word. */
const TOKEN_SIGN = /[0-9._~+/=]/;
/** Tokens this long are credentials even without a digit or sign; English words rarely are. */
const LONG_TOKEN = 16;

/**
 * Whether the word after "Bearer" is a credential: always in an Authorization header, and
 * elsewhere when it looks like a token, so prose such as "for the JWT bearer flow" (from
 * setting names and error texts) keeps its words.
 */
function isBearerToken(word: string, before: string): boolean {
  return AFTER_AUTHORIZATION.test(before) || TOKEN_SIGN.test(word) || word.length >= LONG_TOKEN;
}

const SECRET_PATTERNS: readonly RegExp[] = [
  // Basic credentials are base64 of user:password; "the basic plan" is not one.
  /\b(Basic)\s+[A-Za-z0-9+/]{8,}={0,2}/g,
  // Access and refresh tokens, authorization codes, admin tokens: not inside a word, so
  // "great_success" keeps its eat_.
  new RegExp(`(?<![A-Za-z0-9])(?:eat|ert|eac|adm)_${TOKEN_CHARS}{8,}`, 'g'),
  // Webhook secrets are standard base64.
  /(?<![A-Za-z0-9])whsec_[A-Za-z0-9+/]{8,}={0,2}/g,
  // Integration keys, also glued to a name (EBS_API_KEY_ik_...): short ones only at a word start.
  new RegExp(`\\bik_${TOKEN_CHARS}+|ik_${TOKEN_CHARS}{8,}`, 'g'),
  /\b(access_token|refresh_token|code_verifier|client_secret|api_key|token)=([^&\s"']+)/gi,
  // The authorization code in a callback URL's query or fragment.
  /([?&#])(code)=([^&#\s"']+)/g,
  // The same names as JSON members, e.g. a logged token response body.
  /"(access_token|refresh_token|code_verifier|client_secret|api_key|apiKey|accessToken|refreshToken|password)"\s*:\s*"((?:[^"\\]|\\.)*)"/g,
  // Credentials inside a URL: https://user:secret@host
  /(\/\/[^/\s:@]+):([^@\s/]+)@/g,
];

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) || SECRET_KEY_ENDINGS.some((ending) => ending.test(key));
}

export function scrubText(text: string): string {
  let out = text.replace(
    BEARER,
    (match: string, bearer: string, word: string, offset: number, whole: string) =>
      isBearerToken(word, whole.slice(0, offset)) ? `${bearer} ${REDACTED}` : match,
  );
  for (const pattern of SECRET_PATTERNS) {
    out = out.replace(pattern, (match: string, ...groups: unknown[]) => {
      const first = groups[0];
      if (typeof first === 'string' && /^basic$/i.test(first)) return `${first} ${REDACTED}`;
      if (typeof first === 'string' && match.startsWith('"')) return `"${first}":"${REDACTED}"`;
      if (typeof first === 'string' && match.startsWith('//')) return `${first}:${REDACTED}@`;
      if (typeof first === 'string' && /^[?&#]$/.test(first))
        return `${first}${String(groups[1])}=${REDACTED}`;
      if (typeof first === 'string' && match.includes('=')) return `${first}=${REDACTED}`;
      return REDACTED;
    });
  }
  return out;
}

/**
 * Deep copy of a value with secrets removed; cycles and depth are bounded. `seen` holds the
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
  if (typeof value === 'string') return scrubText(value);
  if (typeof value !== 'object' || value === null) return value;
  if (depth > 12) return '[depth limit]';
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1, seen));
  if (value instanceof Error) {
    const out: Record<string, unknown> = {
      type: value.name,
      message: scrubText(value.message),
    };
    if (value.stack) out.stack = scrubText(value.stack);
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
  if (value instanceof Date || value instanceof URL) return scrubText(value.toString());
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] =
      isSecretKey(key) && item !== null && item !== undefined
        ? REDACTED
        : redact(item, depth + 1, seen);
  }
  return out;
}
