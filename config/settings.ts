import { DEFAULT_TEMPORAL_ADDRESS } from './dev-server-ports.js';

/**
 * Every setting ebsync reads, in one table: its environment variable, where it sits in the
 * config file, whether it is a secret, and what it means. The loader, the error messages
 * and the README's configuration table all come from this list, so they cannot drift.
 */
export interface Setting {
  /** Environment variable name. */
  readonly env: string;
  /** Dotted path inside the config file and the parsed config object. */
  readonly path: string;
  /** Masked in every error message and log line. */
  readonly secret?: boolean;
  /** Default shown in docs (the schema holds the real default). */
  readonly default?: string;
  readonly description: string;
}

export const SETTINGS: readonly Setting[] = [
  {
    env: 'EBSYNC_CONFIG',
    path: 'configFile',
    description: 'Path of a JSON config file; environment variables override its values.',
  },
  {
    env: 'EBSYNC_MODE',
    path: 'mode',
    default: 'development',
    description:
      '`development` or `production`. Production refuses plain-HTTP service and OAuth addresses, even on loopback, and requires `EBSYNC_ENCRYPTION_KEYS`.',
  },
  {
    env: 'EBSYNC_DATA_DIR',
    path: 'dataDir',
    default: '.ebsync',
    description:
      "Local state: dev-server database, development keys, SQLite store. Relative to the working directory; a command npm runs in a subfolder of its project (`npx ebsync` in `docs/`) uses the project's `.ebsync`, as `npm start` does.",
  },
  {
    env: 'EBSYNC_LOG_LEVEL',
    path: 'log.level',
    default: 'info',
    description: 'One of trace, debug, info, warn, error, fatal, silent.',
  },
  {
    env: 'EBSYNC_LOG_FORMAT',
    path: 'log.format',
    default: 'auto',
    description:
      '`json` (one JSON object a line), `pretty` (readable lines), or `auto`: pretty when the log output (stdout) is a terminal, JSON otherwise.',
  },
  {
    env: 'EBS_BASE_URL',
    path: 'service.baseUrl',
    default: '(none)',
    description:
      'Service address up to and including `/api/v1/`. HTTPS; `http://` only to loopback when `EBS_ALLOW_HTTP=true`.',
  },
  {
    env: 'EBS_AUTH_URL',
    path: 'service.authUrl',
    default: '(none)',
    description:
      'Authorization server of installed apps (OAuth). HTTPS; `http://` only to loopback when `EBS_ALLOW_HTTP=true`, as for `EBS_BASE_URL`.',
  },
  {
    env: 'EBS_API_KEY',
    path: 'service.apiKey',
    secret: true,
    default: '(none)',
    description: 'Integration key: `ik_` and up to 500 printable ASCII characters, no spaces.',
  },
  {
    env: 'EBS_CLIENT_ID',
    path: 'service.clientId',
    default: '(none)',
    description: 'OAuth client id of your installed app (`ebsync connect`).',
  },
  {
    env: 'EBS_ROUTE_OVERRIDES',
    path: 'service.routeOverrides',
    default: '(none)',
    description:
      'JSON object re-pointing routes the spec leaves open (`assumed` in `api/routes.ts`), e.g. `{"leadBookings.update":"PUT /api/v1/lead_bookings/{lead_booking_id}"}`. Paths stay under `/api/v1/` of `EBS_BASE_URL`: plain segments only, no `//`, `..`, `%`, `?` or `#`; the `{placeholders}` of the route kept.',
  },
  {
    env: 'EBS_CA_FILE',
    path: 'service.caFile',
    default: '(none)',
    description:
      'PEM file of an extra certificate authority to trust (the sandbox writes one); the commands that talk to the service (`connect`, `worker`, `dev`, `webhooks register`) refuse a missing or non-PEM file at their start (exit 2); the others do not read it.',
  },
  {
    env: 'EBS_ALLOW_HTTP',
    path: 'service.allowHttp',
    default: 'false',
    description:
      'Allow plain `http://` service and OAuth addresses, only on loopback and only in development.',
  },
  {
    env: 'TEMPORAL_ADDRESS',
    path: 'temporal.address',
    default: DEFAULT_TEMPORAL_ADDRESS,
    description:
      'Temporal frontend, `host:port`, the port from 1 to 65535; an IPv6 host in brackets (`[::1]:7233`).',
  },
  {
    env: 'TEMPORAL_NAMESPACE',
    path: 'temporal.namespace',
    default: 'default',
    description:
      'Temporal namespace: 1-255 letters, digits, `.`, `_` or `-`, beginning and ending with a letter or digit.',
  },
  {
    env: 'TEMPORAL_TASK_QUEUE',
    path: 'temporal.taskQueue',
    default: 'ebsync',
    description: 'Task queue the worker polls and clients start workflows on.',
  },
  {
    env: 'TEMPORAL_TLS',
    path: 'temporal.tls',
    default: 'false',
    description:
      'Connect to Temporal over TLS (implied by the other TLS settings and the API key).',
  },
  {
    env: 'TEMPORAL_TLS_CERT',
    path: 'temporal.tlsCertFile',
    default: '(none)',
    description: 'Client certificate PEM file for mTLS.',
  },
  {
    env: 'TEMPORAL_TLS_KEY',
    path: 'temporal.tlsKeyFile',
    default: '(none)',
    description: 'Client private key PEM file for mTLS.',
  },
  {
    env: 'TEMPORAL_TLS_CA',
    path: 'temporal.tlsCaFile',
    default: '(none)',
    description: 'Server CA PEM file, when the server certificate is not publicly trusted.',
  },
  {
    env: 'TEMPORAL_TLS_SERVER_NAME',
    path: 'temporal.tlsServerName',
    default: '(none)',
    description: 'Override of the TLS server name.',
  },
  {
    env: 'TEMPORAL_API_KEY',
    path: 'temporal.apiKey',
    secret: true,
    default: '(none)',
    description: 'API key for Temporal Cloud (sent as a bearer credential over TLS).',
  },
  {
    env: 'TEMPORAL_UI_URL',
    path: 'temporal.uiUrl',
    default: 'http://localhost:8233',
    description:
      "Base address of the Temporal web UI; the status page and `ebsync status` link each workflow to its page there. Unset, with `TEMPORAL_ADDRESS` on loopback (localhost, 127.0.0.1), it is that host and the address's port + 1000, where `ebsync temporal` and `ebsync dev` put the dev server's UI (127.0.0.1:17233 → http://127.0.0.1:18233).",
  },
  {
    env: 'TEMPORAL_CLI_PATH',
    path: 'temporal.cliPath',
    default: '(search)',
    description:
      'Path of the `temporal` CLI. Otherwise PATH, then `~/.cache/ebsync/temporal-1.5.1`, then a build with Go.',
  },
  {
    env: 'EBSYNC_ENCRYPTION_KEYS',
    path: 'encryption.keys',
    secret: true,
    default: '(dev: generated)',
    description:
      "Keys sealing every Temporal payload (AES-256-GCM): `id:base64,...`, 32-byte keys with distinct ids, the first seals new payloads, all open old ones. Required in production, where payloads that are not encrypted are refused; in development a key is generated under `EBSYNC_DATA_DIR` (`encryption-keys`) by the first command that needs one, so a command given another data dir than the worker's cannot open its payloads: it says which key file it read, and that it made it. Make one with `ebsync keygen`.",
  },
  {
    env: 'EBSYNC_SHUTDOWN_GRACE',
    path: 'worker.shutdownGrace',
    default: '30s',
    description:
      'On SIGINT/SIGTERM, how long running activities may finish before they are asked to cancel, their calls to Temporal ended with them (`500ms`, `30s`, `2m`). A token refresh in flight always completes; the worker gives up one minute after the grace.',
  },
  {
    env: 'EBS_REACH_LIMIT',
    path: 'service.reachLimit',
    default: '10000',
    description:
      "Results a list query can reach however paged (the spec's 10,000): a first guess. A page holding fewer results than its own `total_count` promises shows the service's real reach; the pass lowers its reach to it, cuts again every query over it, and says so in its summary and `ebsync status`. The sandbox's export line sets it when `--reach-limit` is not the default.",
  },
  {
    env: 'EBS_PAGE_SIZE',
    path: 'service.pageSize',
    default: '100',
    description:
      'Page size the mirror asks for (`per`); the service grants at most its own maximum.',
  },
  {
    env: 'EBS_RATE_LIMIT',
    path: 'service.rateLimit',
    default: '10',
    description:
      "Requests per second each connection may make to the service, held across every worker that shares the store (`docs/rate-limits.md`): requests are spaced for 0.95 of it, and a 429 slows the connection below it for a while. `0` sets no limit. Set it to the service's limit for one credential.",
  },
  {
    env: 'EBSYNC_STORE_URL',
    path: 'store.url',
    secret: true,
    default: 'sqlite:<EBSYNC_DATA_DIR>/store.db',
    description:
      "Where the mirror's ledger lives: `sqlite:PATH`, or `postgres://…` so workers on many machines share one (its `?sslmode=` as libpq reads it: `disable`, `allow`, `prefer`, `require` (encrypts), `verify-ca` (with `sslrootcert`) or `verify-full` (also checks the server's name), or node-postgres's own `no-verify` (encrypts, checks nothing); any other value is refused; see docs/mirror.md). It may hold a password.",
  },
  {
    env: 'EBSYNC_MIRROR_CONCURRENCY',
    path: 'mirror.concurrency',
    default: '4',
    description: 'Partitions of a mirror pass read at once (1-16), each a few pages at a time.',
  },
  {
    env: 'EBSYNC_MIRROR_MIN_YIELD',
    path: 'mirror.minYield',
    default: '1',
    description:
      "Leads a further cut must be expected to find per request before a pass makes it, to reach leads the cuts so far missed (each such cut reads the whole query again): a number from 0 to 100. `0` tries every cut the filters allow, however many requests a lead costs. Leads left are reported as a gap 'skipped', never silently.",
  },
  {
    env: 'EBSYNC_HUBSPOT_URL',
    path: 'crm.hubspot.baseUrl',
    default: 'https://api.hubapi.com',
    description:
      'HubSpot API origin for `--to hubspot`, with no path (`https://api.hubapi.com/crm/v3` is refused); `http://` only to loopback in development (the fake of `ebsync sandbox --crm hubspot`).',
  },
  {
    env: 'EBSYNC_HUBSPOT_TOKEN',
    path: 'crm.hubspot.token',
    secret: true,
    default: '(none)',
    description: 'Access token of a HubSpot private app (sent as `Authorization: Bearer`).',
  },
  {
    env: 'EBSYNC_HUBSPOT_MAPPING',
    path: 'crm.hubspot.mapping',
    default: '(defaults)',
    description:
      'JSON overrides of the HubSpot field mapping, pipeline and deal stages; see [docs/crm.md](docs/crm.md) and `ebsync mapping show hubspot`.',
  },
  {
    env: 'EBSYNC_PIPEDRIVE_URL',
    path: 'crm.pipedrive.baseUrl',
    default: 'https://api.pipedrive.com',
    description:
      'Pipedrive API origin for `--to pipedrive` (your company domain also works), with no path (`…/api/v1` is refused); `http://` only to loopback in development (the fake of `ebsync sandbox --crm pipedrive`).',
  },
  {
    env: 'EBSYNC_PIPEDRIVE_TOKEN',
    path: 'crm.pipedrive.token',
    secret: true,
    default: '(none)',
    description: 'Personal API token of a Pipedrive user (sent in the `x-api-token` header).',
  },
  {
    env: 'EBSYNC_PIPEDRIVE_MAPPING',
    path: 'crm.pipedrive.mapping',
    default: '(defaults)',
    description:
      'JSON overrides of the Pipedrive field mapping, deal statuses and deletions; see [docs/crm.md](docs/crm.md) and `ebsync mapping show pipedrive`.',
  },
  {
    env: 'EBSYNC_SALESFORCE_URL',
    path: 'crm.salesforce.baseUrl',
    default: 'https://login.salesforce.com',
    description:
      "Salesforce login URL for `--to salesforce` (your org's My Domain URL, or `https://test.salesforce.com` for a sandbox org); API calls go to the `instance_url` its token answer names. `http://` only to loopback in development (the fake of `ebsync sandbox --crm salesforce`).",
  },
  {
    env: 'EBSYNC_SALESFORCE_CLIENT_ID',
    path: 'crm.salesforce.clientId',
    default: '(none)',
    description: 'Consumer key of the Salesforce connected app ebsync uses.',
  },
  {
    env: 'EBSYNC_SALESFORCE_CLIENT_SECRET',
    path: 'crm.salesforce.clientSecret',
    secret: true,
    default: '(none)',
    description: "Consumer secret of that connected app (sent only in the token request's body).",
  },
  {
    env: 'EBSYNC_SALESFORCE_REFRESH_TOKEN',
    path: 'crm.salesforce.refreshToken',
    secret: true,
    default: '(none)',
    description:
      'Refresh token of the Salesforce user ebsync writes as (scopes `api refresh_token`); see [docs/crm.md](docs/crm.md).',
  },
  {
    env: 'EBSYNC_SALESFORCE_USERNAME',
    path: 'crm.salesforce.username',
    default: '(none)',
    description:
      'With `EBSYNC_SALESFORCE_PRIVATE_KEY_FILE`, instead of a refresh token: the pre-authorized user the JWT bearer flow acts as.',
  },
  {
    env: 'EBSYNC_SALESFORCE_PRIVATE_KEY_FILE',
    path: 'crm.salesforce.privateKeyFile',
    default: '(none)',
    description:
      'PEM file of the private key whose certificate the connected app holds; signs the JWT bearer assertion (the key itself is never logged).',
  },
  {
    env: 'EBSYNC_SALESFORCE_MAPPING',
    path: 'crm.salesforce.mapping',
    default: '(defaults)',
    description:
      'JSON overrides of the Salesforce field mapping, opportunity stages, contact role and deletions; see [docs/crm.md](docs/crm.md) and `ebsync mapping show salesforce`.',
  },
  {
    env: 'EBSYNC_MAX_ACTIVITIES',
    path: 'worker.maxConcurrentActivities',
    default: '100',
    description: 'Activities one worker runs at once.',
  },
  {
    env: 'EBSYNC_WORKFLOW_THREAD',
    path: 'worker.workflowThread',
    default: 'false',
    description:
      "`true` runs workflow code on a thread of its own, Temporal's default. By default a worker runs it on its main thread, beside the activities, which saves that thread's memory (about 35 MiB; [docs/mirror.md](docs/mirror.md)). A workflow activation that runs over 5 s has its task failed either way (not under the SDK's `TEMPORAL_DEBUG`). For a worker running many busy workflows, where their CPU would delay its activities.",
  },
  {
    env: 'EBSYNC_WEBHOOK_HOST',
    path: 'webhooks.host',
    default: '127.0.0.1',
    description:
      'Address `ebsync webhooks serve` listens on; `0.0.0.0` to reach it from other machines (put HTTPS in front).',
  },
  {
    env: 'EBSYNC_WEBHOOK_PORT',
    path: 'webhooks.port',
    default: '8790',
    description:
      'Port of the webhook receiver (`0` picks a free one: `ebsync webhooks register <connection>` then needs `--url`, unless that receiver runs on this machine with this data dir). A running receiver records where it listens in `<EBSYNC_DATA_DIR>/webhook-receiver.json`, so `ebsync status`, the status page and `webhooks register` on the same machine and data dir find one started with `--port`, `--host` or on port 0; elsewhere they look at this port.',
  },
  {
    env: 'EBSYNC_WEBHOOK_BODY_LIMIT',
    path: 'webhooks.bodyLimit',
    default: '262144',
    description: 'Largest delivery body in bytes; a larger one is answered 413.',
  },
  {
    env: 'EBSYNC_WEBHOOK_SIGNATURE',
    path: 'webhooks.signature',
    default: 'standard',
    description:
      '`standard` (Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`), or a JSON HMAC header scheme such as `{"header":"x-signature","prefix":"sha256=","timestampHeader":"x-timestamp","idHeader":"x-delivery-id"}`, which signs `<id>.<timestamp>.<body>`; `timestampHeader` is required (see docs/webhooks.md).',
  },
  {
    env: 'EBSYNC_WEBHOOK_ALLOW_UNSIGNED',
    path: 'webhooks.allowUnsigned',
    default: 'false',
    description:
      'Accept deliveries without a signature. Development only; refused in production mode; the receiver warns of it at each start.',
  },
  {
    env: 'EBSYNC_WEBHOOK_BATCH',
    path: 'webhooks.batch',
    default: '100',
    description:
      'Oldest notices one drain batch takes from the inbox (1-1000), with the later notices of the same records already there (up to ten times as many); the latest per record is read once.',
  },
  {
    env: 'EBSYNC_WEBHOOK_DEDUPE_WINDOW',
    path: 'webhooks.dedupeWindow',
    default: '24h',
    description:
      'How long applied notices stay in the inbox: a delivery id seen within it is answered 2xx and not stored again. Older ones are pruned (a retry after that is read again, which is harmless).',
  },
  {
    env: 'EBSYNC_WEBHOOK_SESSION',
    path: 'webhooks.session',
    default: '30s',
    description:
      "How long one drain activity keeps taking batches while notices keep coming (0s-45s), looking at the inbox itself; receivers send no wake-ups meanwhile. 0s: one batch per activity. A session holds one of the worker's activity slots; at most a quarter of them go to sessions at once.",
  },
  {
    env: 'EBSYNC_WEBHOOK_REQUEST_TIMEOUT',
    path: 'webhooks.requestTimeout',
    default: '10s',
    description:
      'The receiver closes a connection whose request (headers and body) has not fully arrived in this time.',
  },
  {
    env: 'EBSYNC_WEBHOOK_HEADERS_TIMEOUT',
    path: 'webhooks.headersTimeout',
    default: '5s',
    description:
      'The receiver closes a connection whose request headers have not arrived in this time (at most the request timeout).',
  },
  {
    env: 'EBSYNC_WEBHOOK_KEEP_ALIVE_TIMEOUT',
    path: 'webhooks.keepAliveTimeout',
    default: '5s',
    description:
      'An idle kept-alive connection is closed after this. Behind a load balancer, make it longer than the balancer’s own idle timeout.',
  },
  {
    env: 'EBSYNC_WEBHOOK_CONNECTION_TIMEOUT',
    path: 'webhooks.connectionTimeout',
    default: '10s',
    description: 'A connection on which nothing is sent or received for this long is closed.',
  },
  {
    env: 'EBSYNC_WEBHOOK_MAX_CONNECTIONS',
    path: 'webhooks.maxConnections',
    default: '1000',
    description: 'Connections the receiver holds open at once; more are refused until some close.',
  },
  {
    env: 'EBS_SANDBOX_API_KEY',
    path: 'sandbox.apiKey',
    secret: true,
    default: '(random)',
    description:
      'The full-permission integration key `ebsync sandbox` gives its default business (`ik_` and at least 8 letters, digits, `_` or `-`); `--api-key -` reads it from standard input instead.',
  },
  {
    env: 'EBS_SANDBOX_ADMIN_TOKEN',
    path: 'sandbox.adminToken',
    secret: true,
    default: '(random)',
    description:
      "The sandbox's admin token (`x-admin-token`): `ebsync sandbox` fixes its own to it, and `webhooks register` sends it to the admin API named by `--sandbox-admin <url>`; `--admin-token -` reads it from standard input instead.",
  },
  {
    env: 'EBSYNC_STATUS_HOST',
    path: 'status.host',
    default: '127.0.0.1',
    description:
      'Address the status page listens on (`ebsync status --serve`, `npm start`). Loopback by default; another address exposes the page (never a secret) to the network.',
  },
  {
    env: 'EBSYNC_STATUS_PORT',
    path: 'status.port',
    default: '4020',
    description: 'Port of the status page; 0 picks a free one.',
  },
  {
    env: 'EBSYNC_STATUS_ALLOWED_HOSTS',
    path: 'status.allowedHosts',
    default: '(none)',
    description:
      'Host names the status page answers to besides IP addresses and `localhost`, comma-separated (the name a proxy or a colleague reaches it by). Any other `Host` header is refused 403, so a web page that rebinds its own name to this address cannot read the page.',
  },
  {
    env: 'EBSYNC_ADMIN_TOKEN',
    path: 'status.adminToken',
    secret: true,
    default: '(none: actions off)',
    description:
      "Token the status page's actions (start a sync, pause or resume a connection, pause, resume or trigger a schedule) require as `Authorization: Bearer …`; at least 16 printable ASCII characters, no spaces. Unset, the page only shows.",
  },
];

export function settingByPath(path: string): Setting | undefined {
  return SETTINGS.find((s) => s.path === path);
}
