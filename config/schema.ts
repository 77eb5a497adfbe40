import { isIP } from 'node:net';
import { z } from 'zod';
import { durationText, parseDuration } from './duration.js';
import { hubspotMappingSetting } from './hubspot-mapping.js';
import { pipedriveMappingSetting } from './pipedrive-mapping.js';
import { salesforceMappingSetting } from './salesforce-mapping.js';
import { jsonSettingValue } from './json-setting.js';
import { isLoopbackHost } from './loopback.js';
import { bareHost, DEFAULT_TEMPORAL_ADDRESS, devUiPort } from './dev-server-ports.js';
import { POSTGRES_URL_FORM, sslModeProblem } from './database-locations.js';
import { parseRouteOverride, ROUTE_ID } from './route-override.js';
import { isNamespaceName, NAMESPACE_RULE_TEXT } from './namespace-names.js';

export { isLoopbackHost };

/** What the environment may say for true or false (zod's stringbool, any case). */
const boolSetting = z.union([z.boolean(), z.stringbool()], {
  error:
    'expected true or false (1, yes, y, on, enabled and 0, no, n, off, disabled are read the same)',
});

const duration = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'expected a duration such as 500ms, 30s, 2m or 1h' });
    return z.NEVER;
  }
  return ms;
});

/**
 * A number setting: a JSON number, or decimal digits as text (the environment). `z.coerce` took
 * what `Number()` takes: a blank EBS_RATE_LIMIT was 0 (no limit at all), a blank port 0 (any
 * port), and '0x10' was 16. Other text is left as it is, for the number schema to refuse.
 */
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;
const numberSetting = <T extends z.ZodType>(schema: T) =>
  z.preprocess(
    (value) => (typeof value === 'string' && DECIMAL.test(value.trim()) ? Number(value) : value),
    schema,
  );

const wholeNumber = z
  .number({ error: 'expected a whole number' })
  .int({ error: 'expected a whole number' })
  .min(1, { error: 'expected a whole number of at least 1' });
const positiveInt = numberSetting(wholeNumber);

const optionalText = z.string().min(1).optional();

/** EBSYNC_WEBHOOK_HEADERS_TIMEOUT when unset. */
const DEFAULT_HEADERS_TIMEOUT_MS = 5_000;

/** EBS_REACH_LIMIT when unset: the spec's 10,000 results a query. */
export const DEFAULT_REACH_LIMIT = 10_000;

/**
 * An integration key as a header can carry it: `ik_` and printable ASCII. A control character
 * or a key of 100 KB passed the check before and failed as the service unreachable (Node
 * refused the header) or an HTTP 431.
 */
export const INTEGRATION_KEY = /^ik_[\x21-\x7e]{1,500}$/;
export const INTEGRATION_KEY_RULE =
  'expected an integration key starting with ik_: up to 500 printable ASCII characters, no spaces';

const DNS_NAME =
  /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;
const IPV6 = /^[0-9a-f:.]*:[0-9a-f:.]*$/i;
/** A host name or an IP address, as a server listens on or TLS names: said here, not by DNS. */
function isHost(text: string): boolean {
  if (IPV6.test(text)) return true;
  if (!DNS_NAME.test(text)) return false;
  // All-numeric labels are an IPv4 address, which must be one ('999.1.1.1' is not).
  const labels = text.replace(/\.$/, '').split('.');
  if (!labels.every((label) => /^\d+$/.test(label))) return true;
  return labels.length === 4 && labels.every((label) => Number(label) <= 255);
}
const hostSetting = z
  .string()
  .refine(isHost, { error: 'expected a host name or an IP address, e.g. 127.0.0.1' });
/** A name Temporal takes as it is: not blank, and no space around it that a shell let in. */
const temporalName = (fallback: string) =>
  z
    .string()
    .regex(/^\S(.*\S)?$/, { error: 'expected a name without spaces around it, not blank' })
    .default(fallback);

const HOST_NAMES_RULE =
  'expected host names separated by commas, e.g. status.example.com,ebsync.internal';
/** Host names, comma-separated in the environment or a list in the file; lowercased. */
const hostNames = z.union([z.string(), z.array(z.string())]).transform((value, ctx) => {
  const names = (Array.isArray(value) ? value : value.split(','))
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  if (
    !names.every((name) =>
      /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(name),
    )
  ) {
    ctx.addIssue({ code: 'custom', message: HOST_NAMES_RULE });
    return z.NEVER;
  }
  return names;
});

const SERVICE_URL_RULE =
  'expected an https:// URL ending in /api/v1/ (http:// only to loopback with EBS_ALLOW_HTTP=true)';
const AUTH_URL_RULE =
  'expected an https:// URL (http:// only to loopback with EBS_ALLOW_HTTP=true)';
const PORT_RULE = 'expected a port from 0 to 65535';
/** A port a server of ebsync listens on; 0 picks a free one. */
const listenPort = numberSetting(
  z
    .number({ error: PORT_RULE })
    .int({ error: PORT_RULE })
    .min(0, { error: PORT_RULE })
    .max(65535, { error: PORT_RULE }),
);

const CRM_URL_RULE = 'expected an https:// URL (http:// only to loopback in development)';
/** HubSpot's and Pipedrive's settings name the API origin: a path there makes every call a 404. */
const CRM_ORIGIN_RULE =
  'expected the API origin, an https:// URL with no path (http:// only to loopback in development)';
/** Why production refuses a plain http:// address: service, OAuth, CRM or automation endpoint. */
export const PRODUCTION_HTTP =
  'plain http:// is refused in production mode, even on loopback; use https://';

/** Whether `[host]:port` holds an IPv6 address in its brackets. */
function isIPv6Host(address: string): boolean {
  return isIP(bareHost(address.slice(0, address.lastIndexOf(':')))) === 6;
}

/**
 * The UI of the dev server at a loopback address: its port + 1000, as `ebsync temporal` and
 * `ebsync dev` run it, so `ebsync status` against `TEMPORAL_ADDRESS=127.0.0.1:17233` links to
 * :18233 rather than to another server's :8233. Elsewhere the UI is not ours to guess.
 */
function devUiUrl(address: string): string {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at);
  const port = Number(address.slice(at + 1));
  const uiPort = devUiPort(port);
  if (!isLoopbackHost(host) || uiPort === undefined) return 'http://localhost:8233';
  return `http://${host}:${uiPort}`;
}

/**
 * An http(s) URL without credentials, query or fragment; `api` also asks for /api/v1/, and
 * `origin` for no path at all (a CRM's API origin: the clients add each route's whole path).
 */
function serverUrl(rule: string, path: 'any' | 'api' | 'origin') {
  return z.string().transform((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: rule });
      return z.NEVER;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      ctx.addIssue({ code: 'custom', message: rule });
      return z.NEVER;
    }
    if (url.username || url.password || url.search || url.hash) {
      ctx.addIssue({
        code: 'custom',
        // Said of whichever setting it is (the line names it): not all are the service's.
        message: 'expected a URL without credentials, query or fragment',
      });
      return z.NEVER;
    }
    if (path === 'origin' && url.pathname !== '/') {
      ctx.addIssue({ code: 'custom', message: CRM_ORIGIN_RULE });
      return z.NEVER;
    }
    if (path !== 'api') return value;
    if (!/\/api\/v1\/?$/.test(url.pathname)) {
      ctx.addIssue({ code: 'custom', message: rule });
      return z.NEVER;
    }
    if (!url.pathname.endsWith('/')) url.pathname += '/';
    return url.toString();
  });
}

/**
 * `{"resource.operation": "METHOD /api/v1/path"}`, checked for shape when the settings load,
 * like any other setting. Whether each names a route that may be overridden is checked against
 * api/'s route table when a process starts (cli/startup-config.ts) and by every client.
 */
const routeOverrides = z
  .union([z.string(), z.record(z.string(), z.string())])
  .transform((value, ctx) => {
    const parsed = jsonSettingValue(value);
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      Array.isArray(parsed) ||
      Object.values(parsed).some((route) => typeof route !== 'string')
    ) {
      ctx.addIssue({
        code: 'custom',
        message: 'expected a JSON object of route id to "METHOD /path"',
      });
      return z.NEVER;
    }
    const overrides = Object.fromEntries(
      Object.entries(parsed as Record<string, string>).map(([id, route]) => [id, route.trim()]),
    );
    for (const [id, route] of Object.entries(overrides)) {
      const shape = ROUTE_ID.test(id)
        ? parseRouteOverride(id, route)
        : { problem: `route override names '${id}', not a route id such as 'leadBookings.update'` };
      if ('problem' in shape) {
        ctx.addIssue({ code: 'custom', message: shape.problem });
        return z.NEVER;
      }
    }
    return overrides;
  });

const KEYS_RULE =
  'expected a comma-separated list of id:base64 entries, each key 32 bytes (generate one with `ebsync keygen`)';

/** `k2:base64,k1:base64`: the first key seals new payloads, all of them open old ones. */
const encryptionKeys = z.string().transform((value, ctx) => {
  const keys: { id: string; key: Buffer }[] = [];
  for (const entry of value
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const match = /^([A-Za-z0-9_.-]{1,64}):([A-Za-z0-9+/=_-]+)$/.exec(entry);
    const key = match?.[2] ? Buffer.from(match[2], 'base64') : undefined;
    if (!match?.[1] || !key || key.length !== 32) {
      ctx.addIssue({ code: 'custom', message: KEYS_RULE });
      return z.NEVER;
    }
    if (keys.some((k) => k.id === match[1])) {
      ctx.addIssue({
        code: 'custom',
        message: `key id '${match[1]}' appears twice; each key needs its own id`,
      });
      return z.NEVER;
    }
    keys.push({ id: match[1], key });
  }
  if (keys.length === 0) {
    ctx.addIssue({ code: 'custom', message: KEYS_RULE });
    return z.NEVER;
  }
  return keys;
});

/**
 * How deliveries are signed: `standard` (Standard Webhooks, what the sandbox sends) or a JSON
 * HMAC header scheme, for a sender the spec leaves open. The timestamp header is required and
 * signed, and so is the id header when there is one (webhooks/signature.ts says how): without
 * them a captured delivery could be replayed forever, under new ids past the dedupe.
 */
const hmacScheme = z.strictObject({
  header: z.string().min(1).toLowerCase(),
  algorithm: z.enum(['sha256', 'sha512']).default('sha256'),
  encoding: z.enum(['hex', 'base64']).default('hex'),
  prefix: z.string().default(''),
  timestampHeader: z.string().min(1).toLowerCase(),
  idHeader: z.string().min(1).toLowerCase().optional(),
});
export type HmacScheme = z.output<typeof hmacScheme>;
const SIGNATURE_RULE =
  'expected standard, or a JSON object {"header":…, "timestampHeader":…, "algorithm"?: sha256|sha512, "encoding"?: hex|base64, "prefix"?, "idHeader"?}';
const TIMESTAMP_RULE =
  'needs "timestampHeader": the signed timestamp is what stops a captured delivery being replayed';
const signatureScheme = z
  .union([z.literal('standard'), z.string(), hmacScheme])
  .transform((value, ctx): 'standard' | HmacScheme => {
    if (value === 'standard') return value;
    let parsed: unknown = value;
    if (typeof value === 'string') {
      try {
        parsed = JSON.parse(value);
      } catch {
        parsed = undefined;
      }
    }
    const scheme = hmacScheme.safeParse(parsed);
    if (!scheme.success) {
      const noTimestamp = scheme.error.issues.some((i) => i.path[0] === 'timestampHeader');
      ctx.addIssue({ code: 'custom', message: noTimestamp ? TIMESTAMP_RULE : SIGNATURE_RULE });
      return z.NEVER;
    }
    return scheme.data;
  });

export const configSchema = z
  .object({
    configFile: optionalText,
    mode: z
      .enum(['development', 'production'], { error: 'expected development or production' })
      .default('development'),
    dataDir: z.string().min(1).default('.ebsync'),
    log: z
      .object({
        level: z
          .enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], {
            error: 'expected one of trace, debug, info, warn, error, fatal, silent',
          })
          .default('info'),
        format: z
          .enum(['auto', 'json', 'pretty'], { error: 'expected auto, json or pretty' })
          .default('auto'),
      })
      .prefault({}),
    service: z
      .object({
        baseUrl: serverUrl(SERVICE_URL_RULE, 'api').optional(),
        authUrl: serverUrl(AUTH_URL_RULE, 'any').optional(),
        apiKey: z.string().regex(INTEGRATION_KEY, { error: INTEGRATION_KEY_RULE }).optional(),
        clientId: optionalText,
        routeOverrides: routeOverrides.optional(),
        caFile: optionalText,
        allowHttp: boolSetting.default(false),
        reachLimit: positiveInt.default(DEFAULT_REACH_LIMIT),
        pageSize: positiveInt.default(100),
        rateLimit: numberSetting(
          z
            .number({ error: 'expected a number of requests per second' })
            .min(0, { error: 'expected a number of requests per second from 0 to 1000' })
            .max(1000, { error: 'expected a number of requests per second from 0 to 1000' }),
        ).default(10),
      })
      .prefault({}),
    store: z
      .object({
        url: z
          .string()
          .regex(/^(sqlite:.+|postgres(ql)?:\/\/.+)$/, {
            error: `expected sqlite:PATH or ${POSTGRES_URL_FORM}`,
          })
          .superRefine((url, ctx) => {
            const problem = sslModeProblem(url);
            if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
          })
          .optional(),
      })
      .prefault({}),
    mirror: z
      .object({
        concurrency: numberSetting(
          wholeNumber.max(16, { error: 'expected a whole number from 1 to 16' }),
        ).default(4),
        minYield: numberSetting(
          z
            .number({ error: 'expected a number from 0 to 100' })
            .min(0, { error: 'expected a number from 0 to 100' })
            .max(100, { error: 'expected a number from 0 to 100' }),
        ).default(1),
      })
      .prefault({}),
    temporal: z
      .object({
        address: z
          .string()
          // An IPv6 address in brackets, as in a URL: [::1]:7233.
          .regex(/^(?:[^\s:/[\]]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/, {
            error:
              'expected host:port, for example localhost:7233 (an IPv6 host in brackets: [::1]:7233)',
          })
          // An IPv6 host in brackets must be an IPv6 address ('[:]' is none).
          .refine((address) => !address.startsWith('[') || isIPv6Host(address), {
            error:
              'expected host:port with an IPv6 address in the brackets, for example [::1]:7233',
          })
          // A port past 65535 was taken, then failed as Temporal unreachable seconds later.
          .refine(
            (address) => {
              const port = Number(address.slice(address.lastIndexOf(':') + 1));
              return port >= 1 && port <= 65535;
            },
            { error: 'expected host:port with a port from 1 to 65535, for example localhost:7233' },
          )
          .default(DEFAULT_TEMPORAL_ADDRESS),
        namespace: z
          .string()
          .refine(isNamespaceName, { error: `expected ${NAMESPACE_RULE_TEXT}` })
          .default('default'),
        taskQueue: temporalName('ebsync'),
        tls: boolSetting.default(false),
        tlsCertFile: optionalText,
        tlsKeyFile: optionalText,
        tlsCaFile: optionalText,
        tlsServerName: hostSetting.optional(),
        apiKey: optionalText,
        cliPath: optionalText,
        uiUrl: serverUrl('expected an http:// or https:// URL', 'any').optional(),
      })
      .transform(({ uiUrl, ...temporal }) => ({
        ...temporal,
        uiUrl: uiUrl ?? devUiUrl(temporal.address),
      }))
      .prefault({}),
    status: z
      .object({
        host: hostSetting.default('127.0.0.1'),
        port: listenPort.default(4020),
        // Sent as `Authorization: Bearer <token>`, which carries no space or control character:
        // a token with one was taken, and every action then answered 401 admin_token_missing.
        adminToken: z
          .string()
          .regex(/^[\x21-\x7e]{16,}$/, {
            error: 'expected at least 16 printable ASCII characters, no spaces',
          })
          .optional(),
        allowedHosts: hostNames.default([]),
      })
      .prefault({}),
    encryption: z.object({ keys: encryptionKeys.optional() }).prefault({}),
    // The sandbox's own credentials, for `ebsync sandbox` and the commands that talk to it
    // (checked where they are used: cli/sandbox.ts).
    sandbox: z.object({ apiKey: optionalText, adminToken: optionalText }).prefault({}),
    crm: z
      .object({
        hubspot: z
          .object({
            baseUrl: serverUrl(CRM_URL_RULE, 'origin').default('https://api.hubapi.com'),
            token: optionalText,
            mapping: hubspotMappingSetting.optional(),
            /** Set by loadConfig when the mapping came from the config file: its path. */
            mappingFile: z.string().optional(),
          })
          .prefault({}),
        pipedrive: z
          .object({
            baseUrl: serverUrl(CRM_URL_RULE, 'origin').default('https://api.pipedrive.com'),
            token: optionalText,
            mapping: pipedriveMappingSetting.optional(),
            /** Set by loadConfig when the mapping came from the config file: its path. */
            mappingFile: z.string().optional(),
          })
          .prefault({}),
        salesforce: z
          .object({
            /** Where OAuth tokens come from; API calls go to the answer's instance_url. */
            baseUrl: serverUrl(CRM_URL_RULE, 'any').default('https://login.salesforce.com'),
            clientId: optionalText,
            clientSecret: optionalText,
            refreshToken: optionalText,
            /** JWT bearer flow: the user, and the key of the app's certificate. */
            username: optionalText,
            privateKeyFile: optionalText,
            mapping: salesforceMappingSetting.optional(),
            /** Set by loadConfig when the mapping came from the config file: its path. */
            mappingFile: z.string().optional(),
          })
          .prefault({}),
      })
      .prefault({}),
    webhooks: z
      .object({
        host: hostSetting.default('127.0.0.1'),
        port: listenPort.default(8790),
        bodyLimit: positiveInt.default(256 * 1024),
        signature: signatureScheme.default('standard'),
        allowUnsigned: boolSetting.default(false),
        batch: numberSetting(
          wholeNumber.max(1000, { error: 'expected a whole number from 1 to 1000' }),
        ).default(100),
        dedupeWindow: duration.default(24 * 3_600_000),
        // A session ends before its activity's heartbeat timeout (a minute) could pass since
        // it began, so a retry elsewhere never overlaps it (one reader of a record at a time).
        session: duration
          .refine((ms) => ms <= 45_000, { error: 'expected a duration from 0s to 45s' })
          .default(30_000),
        requestTimeout: duration.default(10_000),
        headersTimeout: duration.default(DEFAULT_HEADERS_TIMEOUT_MS),
        keepAliveTimeout: duration.default(5_000),
        connectionTimeout: duration.default(10_000),
        maxConnections: positiveInt.default(1_000),
      })
      .prefault({}),
    worker: z
      .object({
        shutdownGrace: duration.default(30_000),
        maxConcurrentActivities: positiveInt.default(100),
        workflowThread: boolSetting.default(false),
      })
      .prefault({}),
  })
  .superRefine((config, ctx) => {
    // Plain HTTP carries keys and tokens in clear: only to this machine, and only in development.
    const urls = [
      ['baseUrl', config.service.baseUrl, SERVICE_URL_RULE],
      ['authUrl', config.service.authUrl, AUTH_URL_RULE],
    ] as const;
    for (const [key, value, rule] of urls) {
      if (value === undefined) continue;
      const url = new URL(value);
      if (url.protocol !== 'http:') continue;
      const loopbackAllowed = config.service.allowHttp && isLoopbackHost(url.hostname);
      if (loopbackAllowed && config.mode === 'development') continue;
      ctx.addIssue({
        code: 'custom',
        path: ['service', key],
        message: loopbackAllowed ? PRODUCTION_HTTP : rule,
      });
    }
    // The CRM fakes (`ebsync sandbox --crm`) speak plain HTTP on loopback: development only.
    for (const crm of ['hubspot', 'pipedrive', 'salesforce'] as const) {
      const crmUrl = new URL(config.crm[crm].baseUrl);
      if (
        crmUrl.protocol === 'http:' &&
        (config.mode !== 'development' || !isLoopbackHost(crmUrl.hostname))
      ) {
        ctx.addIssue({ code: 'custom', path: ['crm', crm, 'baseUrl'], message: CRM_URL_RULE });
      }
    }
    const w = config.webhooks;
    if (w.requestTimeout <= 0 || w.headersTimeout <= 0 || w.headersTimeout > w.requestTimeout) {
      // A request timeout under the headers timeout left at its default is the one set wrong:
      // the line named the headers timeout, as '(missing)'.
      const blame =
        w.requestTimeout <= 0 ||
        (w.headersTimeout === DEFAULT_HEADERS_TIMEOUT_MS && w.headersTimeout > w.requestTimeout)
          ? 'requestTimeout'
          : 'headersTimeout';
      ctx.addIssue({
        code: 'custom',
        path: ['webhooks', blame],
        message: `expected a request timeout above 0 and a headers timeout above 0 and at most the request timeout (request ${durationText(w.requestTimeout)}, headers ${durationText(w.headersTimeout)})`,
      });
    }
    if (config.webhooks.allowUnsigned && config.mode !== 'development') {
      ctx.addIssue({
        code: 'custom',
        path: ['webhooks', 'allowUnsigned'],
        message: 'unsigned webhooks are accepted only in development mode',
      });
    }
    const t = config.temporal;
    if ((t.tlsCertFile === undefined) !== (t.tlsKeyFile === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['temporal', t.tlsCertFile === undefined ? 'tlsCertFile' : 'tlsKeyFile'],
        message: 'TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together; set both or neither',
      });
    }
  });

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
