import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseDuration } from '../../config/index.js';

/** A RegExp source matching text literally (file paths hold dots). */
const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const dir = mkdtempSync(join(tmpdir(), 'ebsync-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCount = 0;
/** Writes a config file (an object is written as JSON, a string as is) and returns its path. */
function configFile(content: unknown): string {
  fileCount += 1;
  const file = join(dir, `config-${fileCount}.json`);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return file;
}

/** The lines of the ConfigError that loadConfig(env) throws; fails the test if it does not. */
function errorLines(env: NodeJS.ProcessEnv): readonly string[] {
  let thrown: unknown;
  try {
    loadConfig(env);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  const error = thrown as ConfigError;
  expect(error.message).toBe(error.lines.join('\n'));
  for (const line of error.lines) expect(line).not.toContain('\n');
  return error.lines;
}

const URL_RULE =
  'expected an https:// URL ending in /api/v1/ (http:// only to loopback with EBS_ALLOW_HTTP=true)';

describe('loadConfig defaults', () => {
  it('gives the documented defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      mode: 'development',
      dataDir: '.ebsync',
      log: { level: 'info' },
      service: { allowHttp: false },
      temporal: {
        address: 'localhost:7233',
        namespace: 'default',
        taskQueue: 'ebsync',
        tls: false,
      },
      worker: { shutdownGrace: 30_000, maxConcurrentActivities: 100, workflowThread: false },
      mirror: { concurrency: 4 },
    });
    expect(config.configFile).toBeUndefined();
    expect(config.service).toEqual({
      allowHttp: false,
      reachLimit: 10_000,
      pageSize: 100,
      rateLimit: 10,
    });
    expect(config.store).toEqual({});
    expect(config.temporal).toEqual({
      address: 'localhost:7233',
      namespace: 'default',
      taskQueue: 'ebsync',
      tls: false,
      uiUrl: 'http://localhost:8233',
    });
  });

  it("links the UI of a loopback Temporal to its port + 1000, where ebsync's dev server puts it", () => {
    expect(loadConfig({ TEMPORAL_ADDRESS: '127.0.0.1:17233' }).temporal.uiUrl).toBe(
      'http://127.0.0.1:18233',
    );
    expect(loadConfig({ TEMPORAL_ADDRESS: 'localhost:7707' }).temporal.uiUrl).toBe(
      'http://localhost:8707',
    );
    // Not ours to guess elsewhere, nor past the last port; a URL given is kept as it is.
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal.example.com:7233' }).temporal.uiUrl).toBe(
      'http://localhost:8233',
    );
    expect(loadConfig({ TEMPORAL_ADDRESS: '127.0.0.1:65000' }).temporal.uiUrl).toBe(
      'http://localhost:8233',
    );
    expect(
      loadConfig({ TEMPORAL_ADDRESS: '127.0.0.1:17233', TEMPORAL_UI_URL: 'http://ui.local:8080' })
        .temporal.uiUrl,
    ).toBe('http://ui.local:8080');
  });

  it('takes an IPv6 Temporal address in brackets, and links its UI on loopback', () => {
    const { temporal } = loadConfig({ TEMPORAL_ADDRESS: '[::1]:17233' });
    expect(temporal.address).toBe('[::1]:17233');
    expect(temporal.uiUrl).toBe('http://[::1]:18233');
    expect(loadConfig({ TEMPORAL_ADDRESS: '[0:0:0:0:0:0:0:1]:17233' }).temporal.uiUrl).toBe(
      'http://[0:0:0:0:0:0:0:1]:18233',
    );
    expect(loadConfig({ TEMPORAL_ADDRESS: '[2001:db8::7]:7233' }).temporal.address).toBe(
      '[2001:db8::7]:7233',
    );
  });

  it('treats empty environment variables as unset', () => {
    const config = loadConfig({ TEMPORAL_ADDRESS: '', EBSYNC_LOG_LEVEL: '', EBS_BASE_URL: '' });
    expect(config.temporal.address).toBe('localhost:7233');
    expect(config.log.level).toBe('info');
    expect(config.service.baseUrl).toBeUndefined();
  });

  it('reads typed values from the environment', () => {
    const config = loadConfig({
      EBSYNC_MODE: 'development',
      EBSYNC_SHUTDOWN_GRACE: '2m',
      EBSYNC_MAX_ACTIVITIES: '7',
      EBSYNC_WORKFLOW_THREAD: 'true',
      TEMPORAL_TLS: 'true',
      EBS_API_KEY: 'ik_test_123',
    });
    expect(config.mode).toBe('development');
    expect(config.worker).toEqual({
      shutdownGrace: 120_000,
      maxConcurrentActivities: 7,
      workflowThread: true,
    });
    expect(config.temporal.tls).toBe(true);
    expect(config.service.apiKey).toBe('ik_test_123');
  });
});

describe('loadConfig with a JSON config file (EBSYNC_CONFIG)', () => {
  it('takes values from the file and lets environment variables override them', () => {
    const file = configFile({
      temporal: { address: 'temporal.internal:7233', taskQueue: 'from-file' },
      log: { level: 'debug' },
      worker: { shutdownGrace: '45s', maxConcurrentActivities: 3, workflowThread: true },
    });
    const config = loadConfig({
      EBSYNC_CONFIG: file,
      TEMPORAL_ADDRESS: 'from-env.example:7233',
      EBSYNC_MAX_ACTIVITIES: '9',
    });
    expect(config.configFile).toBe(file);
    expect(config.temporal.address).toBe('from-env.example:7233');
    expect(config.temporal.taskQueue).toBe('from-file');
    expect(config.log.level).toBe('debug');
    expect(config.worker).toEqual({
      shutdownGrace: 45_000,
      maxConcurrentActivities: 9,
      workflowThread: true,
    });
  });

  it('keeps the file value when the environment variable is empty', () => {
    const file = configFile({ temporal: { address: 'temporal.internal:7233' } });
    expect(loadConfig({ EBSYNC_CONFIG: file, TEMPORAL_ADDRESS: '' }).temporal.address).toBe(
      'temporal.internal:7233',
    );
  });

  it('names a bad value inside the file as `<path> in <file>`', () => {
    const file = configFile({ worker: { shutdownGrace: 'soon' }, log: { level: 'info' } });
    expect(errorLines({ EBSYNC_CONFIG: file })).toEqual([
      `worker.shutdownGrace in ${file}='soon' is not allowed: expected a duration such as 500ms, 30s, 2m or 1h`,
    ]);
  });

  it('lets a good environment variable override a bad file value', () => {
    const file = configFile({ worker: { shutdownGrace: 'soon' } });
    expect(
      loadConfig({ EBSYNC_CONFIG: file, EBSYNC_SHUTDOWN_GRACE: '5s' }).worker.shutdownGrace,
    ).toBe(5_000);
  });

  it('masks a secret from the file in its error line', () => {
    const secret = 'sk_from_file_very_secret';
    const file = configFile({ service: { apiKey: secret } });
    const lines = errorLines({ EBSYNC_CONFIG: file });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^service\\.apiKey in ${literal(file)}=`));
    expect(lines[0]).toContain('expected an integration key starting with ik_');
    expect(lines[0]).not.toContain(secret);
    expect(lines[0]).not.toContain('very_secret');
  });

  it('reports invalid JSON in one line, even when the file spans lines', () => {
    const file = configFile('{\n  "mode":\n}\n');
    const lines = errorLines({ EBSYNC_CONFIG: file });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(`^EBSYNC_CONFIG='${literal(file)}' is not valid JSON \\(.+\\)`),
    );
  });

  it('does not quote the file in a JSON error (a secret may sit next to the mistake)', () => {
    const secret = 'cloud-key-4f9a8b7c6d5e';
    // A typical mistake: the secret pasted without quotes.
    const file = configFile(`{\n  "temporal": {\n    "apiKey": ${secret}\n  }\n}\n`);
    const lines = errorLines({ EBSYNC_CONFIG: file });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(`^EBSYNC_CONFIG='${literal(file)}' is not valid JSON \\(.+\\)`),
    );
    expect(lines[0]).not.toContain('cloud-key');
  });

  it('reports a file of the wrong JSON shape in one line', () => {
    const file = configFile('[1, 2, 3]');
    expect(errorLines({ EBSYNC_CONFIG: file })).toEqual([
      `EBSYNC_CONFIG='${file}' must hold a JSON object of settings`,
    ]);
  });

  it('reports an unknown key, nested ones too, in one line naming it and the allowed ones', () => {
    const file = configFile({ temporal: { adress: 'localhost:7233' }, temporl: { tls: true } });
    const lines = errorLines({ EBSYNC_CONFIG: file });
    expect(lines).toHaveLength(2);
    const named = lines.map(
      (line) => /has an unknown setting '([^']+)'; allowed: (.+)$/.exec(line)?.slice(1) ?? [],
    );
    expect(named.map(([path]) => path)).toEqual(['temporal.adress', 'temporl.tls']);
    expect(named[0]?.[1]?.split(', ')).toEqual(
      expect.arrayContaining([
        'mode',
        'dataDir',
        'log.level',
        'temporal.address',
        'worker.shutdownGrace',
      ]),
    );
  });

  it('takes a setting written with its dotted path as its key, as the README writes them', () => {
    const file = configFile({
      'temporal.address': 'temporal.internal:7233',
      log: { level: 'warn' },
    });
    const config = loadConfig({ EBSYNC_CONFIG: file });
    expect(config.temporal.address).toBe('temporal.internal:7233');
    expect(config.log.level).toBe('warn');
    // Both ways at once: refused, not one of them silently taken.
    const twice = configFile({ 'temporal.address': 'a:1', temporal: { address: 'b:2' } });
    expect(errorLines({ EBSYNC_CONFIG: twice })).toEqual([
      `EBSYNC_CONFIG='${twice}' gives the setting 'temporal.address' twice`,
    ]);
  });

  it('refuses a file that names another config file', () => {
    const file = configFile({ configFile: '/elsewhere.json' });
    expect(errorLines({ EBSYNC_CONFIG: file })[0]).toMatch(
      new RegExp(`^EBSYNC_CONFIG='${file}' has an unknown setting 'configFile'; allowed: `),
    );
  });

  it('reports a missing file in one line', () => {
    const file = join(dir, 'does-not-exist.json');
    expect(errorLines({ EBSYNC_CONFIG: file })).toEqual([
      `EBSYNC_CONFIG='${file}' cannot be read (ENOENT); expected a JSON file`,
    ]);
  });
});

describe('loadConfig errors', () => {
  it('gives exactly one line per bad setting, naming the variable, its value and what is allowed', () => {
    const lines = errorLines({
      EBS_BASE_URL: 'ftp://x',
      TEMPORAL_ADDRESS: 'temporal.internal',
      EBSYNC_SHUTDOWN_GRACE: 'soon',
      EBSYNC_LOG_LEVEL: 'loud',
      TEMPORAL_NAMESPACE: 'fine',
    });
    expect([...lines].sort()).toEqual(
      [
        `EBS_BASE_URL='ftp://x' is not allowed: ${URL_RULE}`,
        "TEMPORAL_ADDRESS='temporal.internal' is not allowed: expected host:port, for example localhost:7233 (an IPv6 host in brackets: [::1]:7233)",
        "EBSYNC_SHUTDOWN_GRACE='soon' is not allowed: expected a duration such as 500ms, 30s, 2m or 1h",
        "EBSYNC_LOG_LEVEL='loud' is not allowed: expected one of trace, debug, info, warn, error, fatal, silent",
      ].sort(),
    );
  });

  it.each([
    ['EBSYNC_MODE', 'prod', 'expected development or production'],
    // The words it also reads are said, as it takes them (yes, on, 1…).
    [
      'EBS_ALLOW_HTTP',
      'maybe',
      'expected true or false (1, yes, y, on, enabled and 0, no, n, off, disabled are read the same)',
    ],
    ['EBSYNC_MAX_ACTIVITIES', '0', 'expected a whole number of at least 1'],
    ['EBSYNC_MAX_ACTIVITIES', 'many', 'expected a whole number'],
    ['TEMPORAL_ADDRESS', 'http://localhost:7233', 'expected host:port'],
    // An IPv6 host without brackets cannot be told from its port.
    ['TEMPORAL_ADDRESS', '[:]:7233', 'expected host:port with an IPv6 address in the brackets'],
    [
      'TEMPORAL_ADDRESS',
      '::1:7233',
      'expected host:port, for example localhost:7233 (an IPv6 host in brackets: [::1]:7233)',
    ],
    ['EBSYNC_WEBHOOK_SESSION', '2m', 'expected a duration from 0s to 45s'],
    // Said here, in the setting's name, not later by DNS or the TLS library.
    ['EBSYNC_STATUS_HOST', '999.1.1.1', 'expected a host name or an IP address'],
    ['EBSYNC_WEBHOOK_HOST', 'not a host', 'expected a host name or an IP address'],
    ['TEMPORAL_TLS_SERVER_NAME', 'bad name', 'expected a host name or an IP address'],
    ['TEMPORAL_TASK_QUEUE', ' ', 'expected a name without spaces around it, not blank'],
    // Blank is no number: it was read as 0, which is no rate limit, any port, every cut.
    ['EBS_RATE_LIMIT', ' ', 'expected a number of requests per second'],
    ['EBSYNC_MIRROR_MIN_YIELD', ' ', 'expected a number from 0 to 100'],
    ['EBSYNC_WEBHOOK_PORT', ' ', 'expected a port from 0 to 65535'],
    ['EBSYNC_STATUS_PORT', '\t', 'expected a port from 0 to 65535'],
    ['EBSYNC_MAX_ACTIVITIES', ' ', 'expected a whole number'],
    // Decimal digits only: '0x10' was taken as 16.
    ['EBS_RATE_LIMIT', '0x10', 'expected a number of requests per second'],
    ['EBSYNC_WEBHOOK_BATCH', '0x10', 'expected a whole number'],
    ['EBSYNC_MIRROR_CONCURRENCY', '17', 'expected a whole number from 1 to 16'],
    // Said when the settings load, not 5 s later as Temporal unreachable.
    ['TEMPORAL_ADDRESS', 'host:99999', 'expected host:port with a port from 1 to 65535'],
    ['TEMPORAL_ADDRESS', 'localhost:0', 'expected host:port with a port from 1 to 65535'],
    // The rule of --namespace: a name a later hint would print for a shell to split is refused.
    ...['prod ', 'bad ns', '-lead', 'ns!', `n${'s'.repeat(255)}`].map((value) => [
      'TEMPORAL_NAMESPACE',
      value,
      "expected 1-255 letters, digits, '.', '_' or '-', beginning and ending with a letter or digit",
    ]),
  ])('%s=%s is rejected with "%s"', (name, value, allowed) => {
    const lines = errorLines({ [name]: value });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`${name}='${value}' is not allowed: ${allowed}`);
  });

  it('blames the webhook timeout that was set when the request timeout falls under the headers one', () => {
    // The headers timeout left at its 5 s default: the line named it, as '(missing)'.
    expect(errorLines({ EBSYNC_WEBHOOK_REQUEST_TIMEOUT: '2s' })).toEqual([
      "EBSYNC_WEBHOOK_REQUEST_TIMEOUT='2s' is not allowed: expected a request timeout above 0 and a headers timeout above 0 and at most the request timeout (request 2s, headers 5s)",
    ]);
    expect(errorLines({ EBSYNC_WEBHOOK_HEADERS_TIMEOUT: '20s' })).toEqual([
      "EBSYNC_WEBHOOK_HEADERS_TIMEOUT='20s' is not allowed: expected a request timeout above 0 and a headers timeout above 0 and at most the request timeout (request 10s, headers 20s)",
    ]);
    expect(errorLines({ EBSYNC_WEBHOOK_REQUEST_TIMEOUT: '0s' })[0]).toMatch(
      /^EBSYNC_WEBHOOK_REQUEST_TIMEOUT='0s' is not allowed/,
    );
  });

  it.each([
    ['EBSYNC_STATUS_HOST', '::1'],
    ['EBSYNC_WEBHOOK_HOST', '0.0.0.0'],
    ['EBSYNC_STATUS_HOST', 'localhost'],
    ['TEMPORAL_TLS_SERVER_NAME', 'temporal.example.com'],
    ['TEMPORAL_TASK_QUEUE', 'ebsync-eu'],
    ['TEMPORAL_ADDRESS', 'temporal.example.com:65535'],
    ['TEMPORAL_NAMESPACE', 'prod.a1b2c'],
    ['TEMPORAL_NAMESPACE', `n${'s'.repeat(254)}`],
    ['EBS_RATE_LIMIT', '0.5'],
    ['EBS_RATE_LIMIT', ' 5 '],
    ['EBSYNC_WEBHOOK_PORT', '0'],
  ])('%s=%s is taken', (name, value) => {
    expect(() => loadConfig({ [name]: value })).not.toThrow();
  });

  it('refuses an EBSYNC_STORE_URL sslmode the driver would misread, in one line and without the password', () => {
    const typo = errorLines({ EBSYNC_STORE_URL: 'postgres://u:hunter2@h/db?sslmode=requir' });
    expect(typo).toHaveLength(1);
    expect(typo[0]).toMatch(/^EBSYNC_STORE_URL='\*+\(\d+ chars\)' is not allowed: /);
    expect(typo[0]).toContain(
      "sslmode 'requir' is not allowed: expected disable, allow, prefer, require, verify-ca, verify-full, no-verify",
    );
    expect(typo[0]).not.toContain('hunter2');
    const noCa = errorLines({ EBSYNC_STORE_URL: 'postgres://u:p@h/db?sslmode=verify-ca' });
    expect(noCa).toHaveLength(1);
    expect(noCa[0]).toContain('sslmode verify-ca needs sslrootcert=FILE');
    const twice = errorLines({
      EBSYNC_STORE_URL: 'postgres://u:p@h/db?sslmode=disable&sslmode=verify-full',
    });
    expect(twice[0]).toContain('sslmode is given more than once');
    for (const good of [
      'postgres://u:p@h/db?sslmode=require',
      'postgres://u:p@h/db?sslmode=verify-ca&sslrootcert=/etc/ca.pem',
      'postgresql://u:p@h/db',
      'sqlite:/tmp/store.db',
    ]) {
      expect(loadConfig({ EBSYNC_STORE_URL: good }).store.url).toBe(good);
    }
  });

  it('masks a bad EBS_API_KEY: the line names the variable but not one character of the value', () => {
    const secret = 'sk_live_Zq8topsecretvalue';
    const lines = errorLines({ EBS_API_KEY: secret });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^EBS_API_KEY='\*+\(\d+ chars\)' is not allowed: /);
    expect(lines[0]).toContain('expected an integration key starting with ik_');
    expect(lines[0]).not.toContain(secret);
    expect(lines[0]).not.toContain('topsecret');
    expect(lines[0]).not.toContain('sk_live');
  });

  it('refuses an EBS_API_KEY no header can carry: a control character, or over 500 characters', () => {
    // Both passed before and failed later as the service unreachable or an HTTP 431.
    for (const key of ['ik_abc12345\u0001', `ik_${'a'.repeat(501)}`, 'ik_abc\u00e912345']) {
      const lines = errorLines({ EBS_API_KEY: key });
      expect(lines, key).toHaveLength(1);
      expect(lines[0]).toMatch(/^EBS_API_KEY='\*+\(\d+ chars\)' is not allowed: /);
      expect(lines[0]).toContain('up to 500 printable ASCII characters');
    }
    const longest = `ik_${'a'.repeat(500)}`;
    expect(loadConfig({ EBS_API_KEY: longest }).service.apiKey).toBe(longest);
  });

  it('refuses an EBSYNC_ADMIN_TOKEN no Authorization header can carry, masked', () => {
    // Taken before, and then every action of the status page answered 401: the header's
    // `Bearer <token>` has no room for a space or a control character.
    for (const token of [
      'my admin token is long',
      'abcdefghijklmnop\n',
      'abcdefghijklmno\u00e9',
      'short',
    ]) {
      const lines = errorLines({ EBSYNC_ADMIN_TOKEN: token });
      expect(lines, token).toEqual([
        `EBSYNC_ADMIN_TOKEN='****(${token.length} chars)' is not allowed: expected at least 16 printable ASCII characters, no spaces`,
      ]);
    }
    const token = 'status-admin-token_0123~!';
    expect(loadConfig({ EBSYNC_ADMIN_TOKEN: token }).status.adminToken).toBe(token);
  });

  it('requires TLS certificate and key together', () => {
    const lines = errorLines({ TEMPORAL_TLS_CERT: '/etc/ebsync/client.pem' });
    expect(lines).toEqual([
      'TEMPORAL_TLS_KEY=(missing) is not allowed: TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together; set both or neither',
    ]);
  });
});

describe('service base URL (EBS_BASE_URL)', () => {
  it.each([
    ['https://ebs.example.com/api/v1', 'https://ebs.example.com/api/v1/'],
    ['https://ebs.example.com/api/v1/', 'https://ebs.example.com/api/v1/'],
    ['https://EBS.Example.com:443/tenant/api/v1', 'https://ebs.example.com/tenant/api/v1/'],
    ['https://ebs.example.com:8443/api/v1', 'https://ebs.example.com:8443/api/v1/'],
  ])('%s is normalised to %s', (input, normalised) => {
    expect(loadConfig({ EBS_BASE_URL: input }).service.baseUrl).toBe(normalised);
  });

  it.each([
    'https://ebs.example.com/',
    'https://ebs.example.com/api/v2/',
    'https://ebs.example.com/api/v1/leads',
    'ebs.example.com/api/v1/',
    'ftp://ebs.example.com/api/v1/',
  ])('%s is rejected', (input) => {
    expect(errorLines({ EBS_BASE_URL: input })).toEqual([
      `EBS_BASE_URL='${input}' is not allowed: ${URL_RULE}`,
    ]);
  });

  it('rejects credentials, query and fragment in the URL', () => {
    const lines = errorLines({ EBS_BASE_URL: 'https://ebs.example.com/api/v1/?tenant=1' });
    expect(lines).toEqual([
      "EBS_BASE_URL='https://ebs.example.com/api/v1/?tenant=1' is not allowed: expected a URL without credentials, query or fragment",
    ]);
  });

  // The rule is shared by every URL setting: its line speaks of that setting, not of "the
  // service URL" (which TEMPORAL_UI_URL is not).
  it.each([
    ['TEMPORAL_UI_URL', 'http://u:hunter2@ui.example/', 'http://u:****@ui.example/'],
    ['EBS_AUTH_URL', 'https://auth.example/#x', 'https://auth.example/#x'],
    ['EBSYNC_HUBSPOT_URL', 'https://api.example/?k=1', 'https://api.example/?k=1'],
  ])('%s=%s is refused naming that setting only', (name, value, shown) => {
    expect(errorLines({ [name]: value })).toEqual([
      `${name}='${shown}' is not allowed: expected a URL without credentials, query or fragment`,
    ]);
  });

  // Both are API origins: a URL with a path (Pipedrive's docs give `…/api/v1` as the base URL)
  // was taken, and every call then went to `<path>/api/v2/…` and answered 404, in a line that
  // named no setting.
  it.each([
    ['EBSYNC_PIPEDRIVE_URL', 'https://api.pipedrive.com/v1'],
    ['EBSYNC_PIPEDRIVE_URL', 'https://acme.pipedrive.com/api/v1/'],
    ['EBSYNC_HUBSPOT_URL', 'https://api.hubapi.com/crm/v3'],
  ])('%s=%s (a path after the origin) is refused naming that setting', (name, value) => {
    expect(errorLines({ [name]: value })).toEqual([
      `${name}='${value}' is not allowed: expected the API origin, an https:// URL with no path (http:// only to loopback in development)`,
    ]);
  });

  it('takes a CRM origin with or without its trailing slash', () => {
    const config = loadConfig({
      EBSYNC_PIPEDRIVE_URL: 'https://acme.pipedrive.com/',
      EBSYNC_HUBSPOT_URL: 'https://api.hubapi.com',
    });
    expect(config.crm.pipedrive.baseUrl).toBe('https://acme.pipedrive.com/');
    expect(config.crm.hubspot.baseUrl).toBe('https://api.hubapi.com');
  });

  it('accepts http:// only with EBS_ALLOW_HTTP=true, to loopback, in development', () => {
    for (const url of [
      'http://localhost:8080/api/v1',
      'http://127.0.0.1:8080/api/v1/',
      'http://[::1]:8080/api/v1/',
    ]) {
      const config = loadConfig({ EBS_BASE_URL: url, EBS_ALLOW_HTTP: 'true' });
      expect(config.service.baseUrl).toBe(url.endsWith('/') ? url : `${url}/`);
      expect(config.service.allowHttp).toBe(true);
    }
  });

  it.each([
    ['without EBS_ALLOW_HTTP', { EBS_BASE_URL: 'http://localhost:8080/api/v1/' }],
    [
      'with EBS_ALLOW_HTTP=false',
      { EBS_BASE_URL: 'http://localhost:8080/api/v1/', EBS_ALLOW_HTTP: 'false' },
    ],
    [
      'to a host that is not loopback',
      { EBS_BASE_URL: 'http://ebs.example.com/api/v1/', EBS_ALLOW_HTTP: 'true' },
    ],
    [
      'to a name that only starts like loopback',
      { EBS_BASE_URL: 'http://127.0.0.1.example.com/api/v1/', EBS_ALLOW_HTTP: 'true' },
    ],
    [
      'in production, even to loopback',
      {
        EBS_BASE_URL: 'http://127.0.0.1:8080/api/v1/',
        EBS_ALLOW_HTTP: 'true',
        EBSYNC_MODE: 'production',
      },
    ],
  ])('rejects http:// %s', (_label, env) => {
    const lines = errorLines(env);
    const rule =
      'EBSYNC_MODE' in env && env.EBSYNC_MODE === 'production'
        ? 'plain http:// is refused in production mode, even on loopback; use https://'
        : URL_RULE;
    expect(lines.filter((line) => line.startsWith('EBS_BASE_URL='))).toEqual([
      `EBS_BASE_URL='${env.EBS_BASE_URL}' is not allowed: ${rule}`,
    ]);
  });

  it('masks credentials inside a service URL', () => {
    const lines = errorLines({ EBS_BASE_URL: 'https://bob:hunter2@svc.example/api/v1/' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('bob:****@');
    expect(lines[0]).not.toContain('hunter2');
  });
});

describe("OAuth server URL (EBS_AUTH_URL): the base URL's rule", () => {
  const AUTH_RULE = 'expected an https:// URL (http:// only to loopback with EBS_ALLOW_HTTP=true)';
  const PRODUCTION = 'plain http:// is refused in production mode, even on loopback; use https://';

  it('accepts https://, and http:// to loopback with EBS_ALLOW_HTTP=true in development', () => {
    expect(loadConfig({ EBS_AUTH_URL: 'https://auth.example.com' }).service.authUrl).toBe(
      'https://auth.example.com',
    );
    expect(
      loadConfig({ EBS_AUTH_URL: 'http://127.0.0.1:4010', EBS_ALLOW_HTTP: 'true' }).service.authUrl,
    ).toBe('http://127.0.0.1:4010');
  });

  it.each([
    [
      'in production, even to loopback',
      { EBS_AUTH_URL: 'http://127.0.0.1:4010', EBS_ALLOW_HTTP: 'true', EBSYNC_MODE: 'production' },
      PRODUCTION,
    ],
    [
      'in production to any host',
      { EBS_AUTH_URL: 'http://auth.example.com', EBSYNC_MODE: 'production' },
      AUTH_RULE,
    ],
    ['without EBS_ALLOW_HTTP', { EBS_AUTH_URL: 'http://127.0.0.1:4010' }, AUTH_RULE],
    [
      'to a host that is not loopback',
      { EBS_AUTH_URL: 'http://auth.example.com', EBS_ALLOW_HTTP: 'true' },
      AUTH_RULE,
    ],
  ])('refuses http:// %s', (_label, env, rule) => {
    expect(errorLines(env).filter((line) => line.startsWith('EBS_AUTH_URL='))).toEqual([
      `EBS_AUTH_URL='${env.EBS_AUTH_URL}' is not allowed: ${rule}`,
    ]);
  });

  it.each([
    'ftp://auth.example.com',
    'auth.example.com',
    'https://auth.example.com/?x=1',
    'https://a:b@auth.example.com',
  ])('refuses %s', (url) => {
    const lines = errorLines({ EBS_AUTH_URL: url });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^EBS_AUTH_URL=/);
  });
});

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['1.5s', 1_500],
    [' 30 s ', 30_000],
    ['250', 250],
    ['0', 0],
    [1200, 1200],
    [0, 0],
  ] as const)('%j is %d ms', (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it.each(['soon', '', '30sec', '1d', '-5s', '5 m s', 's', '1e3', '30S'] as const)(
    '%j is malformed',
    (input) => {
      expect(parseDuration(input)).toBeUndefined();
    },
  );

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])('the number %d is malformed', (input) => {
    expect(parseDuration(input)).toBeUndefined();
  });
});
