import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '../../worker/logger.js';
import { REDACTED, redact, scrubText } from '../../worker/redact.js';
import { PinoTemporalLogger } from '../../worker/runtime.js';

/** A logger at trace level whose JSON lines are kept in memory, as printed. */
function capture(): { logger: Logger; lines: string[]; output: () => string } {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'trace',
    destination: {
      write(line: string) {
        lines.push(line);
      },
    },
  });
  return { logger, lines, output: () => lines.join('') };
}

function parsed(lines: readonly string[]): Record<string, unknown>[] {
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

const SECRETS = {
  apiKey: 'ik_live_abc123',
  bearer: 'eyJsecret.token',
  apiKeyHeader: 'hdr-key-7Qm2',
  refreshToken: 'rt-9f8e7d6c',
  password: 'hunter2-pw',
  clientSecret: 'cs-0a1b2c3d',
  cookie: 'sid=sess-55aa',
} as const;

function expectNoSecrets(text: string): void {
  for (const [name, secret] of Object.entries(SECRETS)) {
    expect(text, `${name} leaked`).not.toContain(secret);
  }
}

describe('the redacting logger', () => {
  it('hides secret values under secret keys, at any depth and inside arrays, and prints the rest', () => {
    const { logger, lines, output } = capture();
    logger.info(
      {
        apiKey: SECRETS.apiKey,
        user: 'bob@example.com',
        request: {
          method: 'POST',
          headers: {
            authorization: `Bearer ${SECRETS.bearer}`,
            'Api-Key': SECRETS.apiKeyHeader,
            Cookie: SECRETS.cookie,
            accept: 'application/json',
          },
          body: {
            grant: { refresh_token: SECRETS.refreshToken, scope: 'leads:read' },
            users: [
              { name: 'ann', password: SECRETS.password },
              { name: 'cid', credentials: [{ client_secret: SECRETS.clientSecret }] },
            ],
          },
        },
      },
      'calling the service',
    );
    expectNoSecrets(output());
    const [line] = parsed(lines);
    expect(line).toMatchObject({
      msg: 'calling the service',
      user: '[e-mail]', // customer data: masked like a secret in a log line
      apiKey: REDACTED,
      request: {
        method: 'POST',
        headers: {
          authorization: REDACTED,
          'Api-Key': REDACTED,
          Cookie: REDACTED,
          accept: 'application/json',
        },
        body: {
          grant: { refresh_token: REDACTED, scope: 'leads:read' },
          users: [
            { name: 'ann', password: REDACTED },
            { name: 'cid', credentials: [{ client_secret: REDACTED }] },
          ],
        },
      },
    });
  });

  it('scrubs credential shapes from strings under ordinary keys', () => {
    const { logger, lines, output } = capture();
    logger.warn(
      {
        curl: `curl -H 'Authorization: Bearer ${SECRETS.bearer}' https://ebs.example.com/api/v1/leads`,
        note: `retrying with key ${SECRETS.apiKey}`,
        callback: `https://app.example.com/cb?state=xyz&refresh_token=${SECRETS.refreshToken}`,
        list: ['plain', `Bearer ${SECRETS.bearer}`],
      },
      'request failed',
    );
    expectNoSecrets(output());
    expect(parsed(lines)[0]).toMatchObject({
      curl: "curl -H 'Authorization: Bearer [redacted]' https://ebs.example.com/api/v1/leads",
      note: 'retrying with key [redacted]',
      callback: 'https://app.example.com/cb?state=xyz&refresh_token=[redacted]',
      list: ['plain', 'Bearer [redacted]'],
    });
  });

  it('scrubs the message string itself and its format arguments', () => {
    const { logger, lines, output } = capture();
    logger.info(`using Bearer ${SECRETS.bearer} and ${SECRETS.apiKey}`);
    logger.info('sent %s with %o', `Bearer ${SECRETS.bearer}`, {
      headers: { 'api-key': SECRETS.apiKeyHeader, accept: 'json' },
      password: SECRETS.password,
    });
    expectNoSecrets(output());
    const [first, second] = parsed(lines);
    expect(first?.msg).toBe('using Bearer [redacted] and [redacted]');
    expect(second?.msg).toContain('sent Bearer [redacted] with');
    expect(second?.msg).toContain('"accept":"json"');
  });

  it('scrubs an Error logged on its own: message, stack and the printed msg', () => {
    const { logger, lines, output } = capture();
    logger.error(
      new TypeError(
        `call failed: Authorization: Bearer ${SECRETS.bearer}, key ${SECRETS.apiKey}, token=${SECRETS.refreshToken}`,
      ),
    );
    expectNoSecrets(output());
    const [line] = parsed(lines);
    expect(line?.msg).toBe(
      'call failed: Authorization: Bearer [redacted], key [redacted], token=[redacted]',
    );
    expect(line?.err).toMatchObject({
      type: 'TypeError',
      message: 'call failed: Authorization: Bearer [redacted], key [redacted], token=[redacted]',
    });
    expect((line?.err as { stack: string }).stack).toContain('TypeError: call failed');
  });

  it('scrubs an Error under err when no message is given, and its own secret fields', () => {
    const { logger, lines, output } = capture();
    const error = Object.assign(new Error(`upstream rejected ${SECRETS.apiKey}`), {
      status: 401,
      config: { headers: { Authorization: `Basic ${SECRETS.password}` } },
      password: SECRETS.password,
    });
    logger.error({ err: error, leadId: 'lead_42' });
    expectNoSecrets(output());
    const [line] = parsed(lines);
    expect(line).toMatchObject({
      msg: 'upstream rejected [redacted]',
      leadId: 'lead_42',
      err: {
        type: 'Error',
        message: 'upstream rejected [redacted]',
        status: 401,
        password: REDACTED,
        config: { headers: { Authorization: REDACTED } },
      },
    });
  });

  it("keeps a Temporal failure's cause chain, scrubbed", () => {
    const { logger, lines, output } = capture();
    const cause = ApplicationFailure.nonRetryable(
      `the service answered 401 to Bearer ${SECRETS.bearer}`,
      'Unauthorized',
    );
    const failure = new ActivityFailure(
      'activity task failed',
      'syncLeads',
      '7',
      RetryState.NON_RETRYABLE_FAILURE,
      undefined,
      cause,
    );
    logger.error({ err: failure }, 'sync failed');
    expectNoSecrets(output());
    const [line] = parsed(lines);
    expect(line).toMatchObject({
      msg: 'sync failed',
      err: {
        message: 'activity task failed',
        activityType: 'syncLeads',
        cause: {
          message: 'the service answered 401 to Bearer [redacted]',
          type: 'Unauthorized',
          nonRetryable: true,
        },
      },
    });
  });

  it('redacts the bindings of child and grandchild loggers', () => {
    const { logger, lines, output } = capture();
    const child = logger.child({
      connection: 'acme',
      apiKey: SECRETS.apiKey,
      password: SECRETS.password,
    });
    child.info('child line');
    child
      .child({ headers: { authorization: `Bearer ${SECRETS.bearer}` }, leadId: 'lead_1' })
      .info('grandchild line');
    expectNoSecrets(output());
    const [first, second] = parsed(lines);
    expect(first).toMatchObject({
      msg: 'child line',
      connection: 'acme',
      apiKey: REDACTED,
      password: REDACTED,
    });
    expect(second).toMatchObject({
      msg: 'grandchild line',
      connection: 'acme',
      leadId: 'lead_1',
      headers: { authorization: REDACTED },
    });
  });

  it("redacts the Temporal SDK's log lines forwarded through PinoTemporalLogger", () => {
    const { logger, lines, output } = capture();
    new PinoTemporalLogger(logger).warn(`Activity failed with Bearer ${SECRETS.bearer}`, {
      activityType: 'syncLeads',
      headers: { authorization: `Bearer ${SECRETS.bearer}` },
    });
    expectNoSecrets(output());
    expect(parsed(lines)[0]).toMatchObject({
      level: 40,
      msg: 'Activity failed with Bearer [redacted]',
      activityType: 'syncLeads',
      headers: { authorization: REDACTED },
    });
  });

  it('logs our typed failures without stacks, and a bug with its stack', () => {
    const { logger, lines } = capture();
    const temporal = new PinoTemporalLogger(logger);
    const refused = ApplicationFailure.create({
      type: 'DestinationTargetError',
      message: 'destination hubspot needs a private-app token',
      nonRetryable: true,
    });
    temporal.warn('Activity failed', { activityType: 'planMirrorPass', error: refused });
    const passFailed = new Error('mirror pass failed: destination hubspot needs a token', {
      cause: new Error('Activity task failed', { cause: refused }),
    });
    temporal.warn('Workflow failed', { workflowType: 'mirrorWorkflow', error: passFailed });
    temporal.warn('Activity failed', { activityType: 'planMirrorPass', error: new TypeError('x') });
    const [activity, workflow, bug] = parsed(lines);
    expect(activity).toMatchObject({
      msg: 'Activity failed',
      error: {
        type: 'DestinationTargetError',
        message: 'destination hubspot needs a private-app token',
        nonRetryable: true,
      },
    });
    expect(JSON.stringify(activity)).not.toContain('stack');
    expect(workflow).toMatchObject({
      msg: 'Workflow failed',
      error: { cause: { cause: { type: 'DestinationTargetError' } } },
    });
    expect(JSON.stringify(workflow)).not.toContain('stack');
    expect(bug).toMatchObject({ error: { type: 'TypeError', message: 'x' } });
    expect((bug?.error as { stack?: string }).stack).toContain('TypeError: x');
  });

  it('logs a cyclic object without crashing', () => {
    const { logger, lines } = capture();
    const node: Record<string, unknown> = { name: 'loop', token: 'tok-secret-1' };
    node.self = node;
    logger.info({ node }, 'cyclic');
    expect(parsed(lines)[0]).toMatchObject({
      node: { name: 'loop', token: REDACTED, self: '[circular]' },
    });
  });
});

describe('scrubText', () => {
  it.each([
    ['Authorization: Bearer abc.def-ghi_jkl~/+=', 'Authorization: Bearer [redacted]'],
    ['authorization: bearer abc', 'authorization: bearer [redacted]'],
    ['{"Authorization":"Bearer abc"}', '{"Authorization":"Bearer [redacted]"}'],
    // Outside a header, a short token still goes when it has a token's signs.
    ['retried with bearer a1b2c3', 'retried with bearer [redacted]'],
    ['the token was Bearer abc.def.', 'the token was Bearer [redacted].'],
    ['sent Bearer AbCdEfGhIjKlMnOpQr', 'sent Bearer [redacted]'],
    ['Authorization: Basic dXNlcjpwYXNz', 'Authorization: Basic [redacted]'],
    ['key ik_live_abc123 rejected', 'key [redacted] rejected'],
    ['keys ik_a and ik_b-2', 'keys [redacted] and [redacted]'],
    [
      'https://x.example/cb?code=1&access_token=abc&state=2',
      'https://x.example/cb?code=[redacted]&access_token=[redacted]&state=2',
    ],
    ['refresh_token=r1 client_secret=c2', 'refresh_token=[redacted] client_secret=[redacted]'],
    ['api_key=k1 and token=t2', 'api_key=[redacted] and token=[redacted]'],
    ['code_verifier=v1', 'code_verifier=[redacted]'],
    // A user's URL beside the template: the credential goes, the template stays.
    [
      "'postgres://bob:hunter2@db/x' is not allowed: expected postgres://USER:PASSWORD@HOST:PORT/DATABASE",
      "'postgres://bob:[redacted]@db/x' is not allowed: expected postgres://USER:PASSWORD@HOST:PORT/DATABASE",
    ],
  ])('%j becomes %j', (input, output) => {
    expect(scrubText(input)).toBe(output);
  });

  it.each([
    'lead 42 synced in 30ms',
    'task queue ebsync',
    'hike_trail',
    'token count: 3',
    // Prose: the words after "bearer" are not credentials.
    'set EBSYNC_SALESFORCE_USERNAME for the JWT bearer flow (see docs/crm.md)',
    'signs the JWT bearer assertion.',
    'a Bearer token goes in the header',
    // The allowed form a message names is a template, not a credential.
    "EBSYNC_STORE_URL='****(9 chars)' is not allowed: expected sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE",
  ])('leaves %j alone', (text) => {
    expect(scrubText(text)).toBe(text);
  });
});

describe('redact', () => {
  it('replaces values under secret keys, whatever their case or separator', () => {
    const out = redact({
      Authorization: 'x',
      'X-API-KEY': 'x',
      api_key: 'x',
      apiKey: 'x',
      accessToken: 'x',
      'refresh-token': 'x',
      client_secret: 'x',
      privateKey: 'x',
      tokenCount: 3,
      keyId: 'k1',
    });
    expect(out).toEqual({
      Authorization: REDACTED,
      'X-API-KEY': REDACTED,
      api_key: REDACTED,
      apiKey: REDACTED,
      accessToken: REDACTED,
      'refresh-token': REDACTED,
      client_secret: REDACTED,
      privateKey: REDACTED,
      tokenCount: 3,
      keyId: 'k1',
    });
  });

  it('shows absent secrets as absent', () => {
    expect(redact({ password: null, apiKey: undefined })).toEqual({
      password: null,
      apiKey: undefined,
    });
  });

  it('does not change its input', () => {
    const input = { headers: { authorization: 'Bearer abc' }, note: 'ik_live_1' };
    redact(input);
    expect(input).toEqual({ headers: { authorization: 'Bearer abc' }, note: 'ik_live_1' });
  });

  it('handles cycles in objects, arrays and error causes without crashing', () => {
    const object: Record<string, unknown> = { name: 'a' };
    object.self = object;
    const array: unknown[] = ['x'];
    array.push(array);
    const error = new Error('loop');
    (error as { cause?: unknown }).cause = error;
    expect(redact(object)).toEqual({ name: 'a', self: '[circular]' });
    expect(redact(array)).toEqual(['x', '[circular]']);
    expect(redact(error)).toMatchObject({ type: 'Error', message: 'loop', cause: '[circular]' });
  });

  it('stops at a depth limit instead of overflowing', () => {
    let deep: Record<string, unknown> = { leaf: true };
    for (let i = 0; i < 50; i += 1) deep = { next: deep };
    expect(JSON.stringify(redact(deep))).toContain('[depth limit]');
  });

  it('redacts Map entries by key and scrubs URLs', () => {
    expect(redact(new Map([['apiKey', 'ik_1']]))).toEqual({ apiKey: REDACTED });
    expect(redact(new URL('https://x.example/cb?access_token=abc'))).toBe(
      'https://x.example/cb?access_token=[redacted]',
    );
  });
});

describe('redaction of shapes found in real logs', () => {
  it('scrubs token members of a logged JSON body and credentials inside a URL', () => {
    const text = scrubText(
      'token answer {"access_token":"at_9f8e7d","refresh_token":"rt_1a2b3c"} from https://bob:hunter2@svc.example/x',
    );
    expect(text).not.toMatch(/at_9f8e7d|rt_1a2b3c|hunter2/);
    expect(text).toContain('"access_token":"[redacted]"');
    expect(text).toContain('https://bob:[redacted]@svc.example/x');
  });

  it('leaves ordinary words after "basic" alone', () => {
    expect(scrubText('the basic plan costs less')).toBe('the basic plan costs less');
  });

  it('prints an object referenced twice (not a cycle) both times', () => {
    const shared = { venue: 'Hall' };
    expect(redact({ a: shared, b: shared })).toEqual({
      a: { venue: 'Hall' },
      b: { venue: 'Hall' },
    });
  });
});

describe('credential shapes the service and the sandbox hand out', () => {
  const access = 'eat_Qm2xV9pL0aZr7Tn4Kd8sWc1Yb6Hf3Ju5Ge0Ri9Oy2Pk';
  const refresh = 'ert_7Tn4Kd8sWc1Yb6Hf3Ju5Ge0Ri9Oy2PkQm2xV9pL0aZr';
  const code = 'eac_Hf3Ju5Ge0Ri9Oy2PkQm2xV9pL0aZr7Tn4Kd8sWc1Yb6';
  const webhook = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+/aB==';
  const admin = 'adm_Ri9Oy2PkQm2xV9pL0aZr7Tn4Kd8sWc1Y';

  it.each([
    ['a bare access token', `got ${access} back`, access],
    ['a bare refresh token', `rotated to ${refresh}.`, refresh],
    ['a bare authorization code', `code was ${code}`, code],
    ['a webhook secret', `endpoint signs with ${webhook}`, webhook],
    ['an admin token', `x-admin-token: ${admin}`, admin],
    ['an ik_ key after a letter', 'keyik_live_7Tn4Kd8sWc1Y', 'ik_live_7Tn4Kd8sWc1Y'],
    ['an ik_ key after _', 'EBS_API_KEY_ik_live_7Tn4Kd8sWc1Y', 'ik_live_7Tn4Kd8sWc1Y'],
    ['an ik_ key glued to a token', `${access}ik_live_7Tn4Kd8sWc1Y`, 'ik_live_7Tn4Kd8sWc1Y'],
    [
      'code= in a callback URL',
      `http://127.0.0.1:5123/callback?code=${'c0de'.repeat(6)}&state=s1`,
      'c0de'.repeat(6),
    ],
    ['code= after a fragment', `https://app.example/cb#code=${'c0de'.repeat(6)}`, 'c0de'.repeat(6)],
  ])('scrubs %s', (_name, text, secret) => {
    const out = scrubText(text);
    expect(out).not.toContain(secret);
    expect(out).toContain(REDACTED);
  });

  it.each([
    'great_success and repeat_customer',
    'HTTP status code=500',
    'error_code=E42 in the retry loop',
    'the admin page',
  ])('leaves %j alone', (text) => {
    expect(scrubText(text)).toBe(text);
  });

  it('replaces values under keys ending in _secret, token or _keys, and x-admin-token', () => {
    expect(
      redact({
        webhook_secret: 's',
        appSecret: 's',
        adminToken: 't',
        csrftoken: 't',
        bearer_token: 't',
        'x-admin-token': 't',
        'X-Admin-Token': 't',
        encryption_keys: 'k',
        api_keys: ['k'],
        signingKeys: 'k',
        tokenCount: 3,
        keyId: 'k1',
        monkeys: 2,
      }),
    ).toEqual({
      webhook_secret: REDACTED,
      appSecret: REDACTED,
      adminToken: REDACTED,
      csrftoken: REDACTED,
      bearer_token: REDACTED,
      'x-admin-token': REDACTED,
      'X-Admin-Token': REDACTED,
      encryption_keys: REDACTED,
      api_keys: REDACTED,
      signingKeys: REDACTED,
      tokenCount: 3,
      keyId: 'k1',
      monkeys: 2,
    });
  });
});

/**
 * The token grammar as one table (issue 30, item 8; issue 33): each row is a text, the
 * secrets that must not survive it, and what it reads as afterwards.
 */
describe('the token grammar of CRM credentials and secret names', () => {
  const sfOrg = '00D5g000004XyZaEAK';
  const sfTail = 'AQ4AQLm3xkd9AbC.def_ghiJKL0123456789mnopQRSTuvwxYZ';
  const sfSession = `${sfOrg}!${sfTail}`;
  const hubspot = 'pat-na1-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d';

  it.each([
    [
      'a Salesforce session in an Authorization header, past its !',
      `Authorization: Bearer ${sfSession}`,
      [sfOrg, sfTail],
      'Authorization: Bearer [redacted]',
    ],
    [
      'a Salesforce session after bearer in prose',
      `retried with bearer ${sfSession} once`,
      [sfOrg, sfTail],
      'retried with bearer [redacted] once',
    ],
    [
      'a bare Salesforce session id',
      `session ${sfSession} expired`,
      [sfOrg, sfTail],
      'session [redacted] expired',
    ],
    [
      'api_token=',
      'GET /v1/deals?api_token=9f8e7d6c5b4a3f2e',
      ['9f8e7d6c5b4a3f2e'],
      'GET /v1/deals?api_token=[redacted]',
    ],
    [
      'password=',
      'login with user=ann password=hunter2-pw',
      ['hunter2-pw'],
      'login with user=ann password=[redacted]',
    ],
    [
      'a "secret" member',
      '{"name":"hook","secret":"s3cr3t-v4lue"}',
      ['s3cr3t-v4lue'],
      '{"name":"hook","secret":"[redacted]"}',
    ],
    [
      'a "password" member with spaces',
      '{ "password" : "pw 1 2" }',
      ['pw 1 2'],
      '{ "password" : "[redacted]" }',
    ],
    [
      'an x-api-token header',
      'x-api-token: 9f8e7d6c5b4a3f2e sent',
      ['9f8e7d6c5b4a3f2e'],
      'x-api-token: [redacted] sent',
    ],
    [
      'an X-Admin-Token header',
      'X-Admin-Token: t0k3n-value',
      ['t0k3n-value'],
      'X-Admin-Token: [redacted]',
    ],
    [
      'a HubSpot private app token',
      `token ${hubspot} refused`,
      [hubspot, '0a1b2c3d'],
      'token [redacted] refused',
    ],
    [
      'a setting dumped as NAME=value',
      'EBSYNC_PIPEDRIVE_TOKEN=pd9f8e7d6c',
      ['pd9f8e7d6c'],
      'EBSYNC_PIPEDRIVE_TOKEN=[redacted]',
    ],
  ])('scrubs %s', (_name, text, secrets, expected) => {
    const out = scrubText(text);
    for (const secret of secrets) expect(out).not.toContain(secret);
    expect(out).toBe(expected);
  });

  it.each([
    // Prose keeps the word after "bearer" when it is not a credential.
    'a bearer 2fa token',
    'for the JWT bearer flow',
    'Salesforce refused the token request (invalid_grant): set EBSYNC_SALESFORCE_USERNAME and EBSYNC_SALESFORCE_PRIVATE_KEY_FILE for the JWT bearer flow (see docs/crm.md)',
    'token: expired',
    'tokenCount=3 keyId=k1',
    'the password field is empty',
    'Hello! 00Dinner at eight',
  ])('leaves %j alone', (text) => {
    expect(scrubText(text)).toBe(text);
  });
});

describe('customer data in log lines', () => {
  it('masks e-mails and phones in messages, errors and fields, and leaves URLs and worker identities', () => {
    const { logger, lines, output } = capture();
    const email = 'jiwoo1@inbox.example';
    logger.warn(
      {
        activityType: 'mirrorPage',
        error: new Error(`the SQLite destination failed: blocked address ${email}`),
        note: `refused: Jane.Doe+events@mail.example.co.uk, and ${email}, call +1 555 010 2030`,
        identity: '7435@worker-host.example.com',
        store: 'postgres://ebsync@db.example.com/ebsync',
      },
      `Activity failed: blocked address ${email}`,
    );
    expect(output()).not.toContain(email);
    expect(output()).not.toContain('Jane.Doe');
    const [line] = parsed(lines);
    expect(line).toMatchObject({
      msg: 'Activity failed: blocked address [e-mail]',
      error: { message: 'the SQLite destination failed: blocked address [e-mail]' },
      note: 'refused: [e-mail], and [e-mail], call [phone]',
      identity: '7435@worker-host.example.com',
      store: 'postgres://ebsync@db.example.com/ebsync',
    });
  });

  it('leaves email addresses in what a command answers its user', () => {
    expect(scrubText('leads 12 refused: jiwoo1@inbox.example is blocked')).toBe(
      'leads 12 refused: jiwoo1@inbox.example is blocked',
    );
  });
});
