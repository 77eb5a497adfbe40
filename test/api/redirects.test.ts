import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { apiKeyAuth, createClient } from '../../api/index.js';
import { exchangeCode } from '../../api/oauth.js';
import { HubSpotClient } from '../../destinations/hubspot-client.js';
import { PipedriveClient } from '../../destinations/pipedrive-client.js';
import { SalesforceClient } from '../../destinations/salesforce-client.js';
import { sqliteAutomationStore } from '../../store/automation-endpoints.js';
import { EncryptionCodec } from '../../worker/codec.js';
import { runCli } from '../helpers/cli.js';
import { standInConnection } from '../helpers/temporal.js';
import { endpointAt, forwardOnce } from '../helpers/forward.js';

/**
 * Every outgoing HTTP client of ebsync against a server that redirects (307: method and body
 * kept) to another origin: none of them may send anything there, since each request carries
 * credentials or customer data for the first origin only (issue 30, item 2). The other
 * origin is a real server that records whatever reaches it; a redirect within the origin is
 * still followed.
 */
interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

function listen(handler: (req: IncomingMessage, body: string) => [number, object, string?]) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const [status, headers, text] = handler(req, body);
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(text ?? '{}');
    });
  });
  return new Promise<{ server: Server; url: string; seen: Seen[] }>((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}`, seen });
    });
  });
}

let trap: Awaited<ReturnType<typeof listen>>;
let redirector: Awaited<ReturnType<typeof listen>>;
const dir = mkdtempSync(join(tmpdir(), 'ebsync-redirects-'));

beforeAll(async () => {
  trap = await listen(() => [200, {}, '{"success":true,"data":{}}']);
  redirector = await listen((req) => {
    // The token request of the Salesforce login answers, naming this server as the instance,
    // so the REST call after it meets the redirect too.
    if (req.method === 'POST' && req.url === '/services/oauth2/token') {
      return [
        200,
        {},
        JSON.stringify({ access_token: 'sf-session', instance_url: redirector.url }),
      ];
    }
    // Within the origin: followed, and answered.
    if (req.url?.startsWith('/same-origin')) return [307, { location: '/landed' }];
    if (req.url === '/landed') return [200, {}, '{"success":true,"data":{"landed":true}}'];
    if (req.url === '/loop') return [302, { location: '/loop' }];
    // A 3xx that names nowhere: no Location to follow, on any origin.
    if (req.url?.startsWith('/nowhere')) return [300, {}];
    return [307, { location: `${trap.url}/stolen${req.url ?? ''}` }];
  });
});
afterAll(async () => {
  await new Promise((r) => trap.server.close(r));
  await new Promise((r) => redirector.server.close(r));
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  trap.seen.length = 0;
  redirector.seen.length = 0;
});

/** The rejection of `call`, which must name the redirect's target origin and the rule. */
async function refusal(call: () => Promise<unknown>): Promise<Error> {
  const error = await call().then(
    () => new Error('expected a refusal'),
    (e: unknown) => e as Error,
  );
  expect(error.message).toContain(`a redirect to ${trap.url}, which ebsync does not follow`);
  expect(trap.seen).toEqual([]);
  return error;
}

describe('a redirect to another origin', () => {
  it('is not followed by the Pipedrive client (token header, body)', async () => {
    const client = new PipedriveClient({ baseUrl: redirector.url, token: 'pd-token-123456' });
    const error = await refusal(() =>
      client.call('POST', '/v1/persons', { json: { name: 'Ann', email: 'ann@example.com' } }),
    );
    expect(error.name).toBe('DestinationTargetError');
    expect(error.message).toMatch(/check EBSYNC_PIPEDRIVE_URL$/);
  });

  it('is not followed by the Salesforce login (client secret, refresh token)', async () => {
    const client = new SalesforceClient({
      loginUrl: `${redirector.url}/elsewhere`,
      clientId: 'cid',
      clientSecret: 'sf-client-secret',
      refreshToken: 'sf-refresh-token',
    });
    const error = await refusal(() => client.call('GET', '/sobjects/Contact'));
    expect(error.name).toBe('DestinationTargetError');
    expect(error.message).toMatch(/check EBSYNC_SALESFORCE_URL$/);
  });

  it('is not followed by the Salesforce REST calls (session)', async () => {
    // The login answers and names the redirecting server as the org's instance.
    const client = new SalesforceClient({
      loginUrl: redirector.url,
      clientId: 'cid',
      refreshToken: 'sf-refresh-token',
    });
    const error = await refusal(() =>
      client.call('POST', '/sobjects/Contact', { json: { LastName: 'A', Email: 'a@example.com' } }),
    );
    expect(error.name).toBe('DestinationTargetError');
  });

  it('is not followed by the HubSpot client (bearer token, records)', async () => {
    const client = new HubSpotClient({ baseUrl: redirector.url, token: 'pat-na1-test' });
    const error = await refusal(() =>
      client.call('POST /crm/v3/objects/contacts/batch/read', (sdk) =>
        sdk.crm.contacts.batchApi.readWithHttpInfo({
          properties: ['email'],
          propertiesWithHistory: [],
          inputs: [{ id: '1' }],
        }),
      ),
    );
    expect(error.name).toBe('DestinationTargetError');
  });

  it("is not followed by the HubSpot client's account-info read (bearer token)", async () => {
    const client = new HubSpotClient({ baseUrl: redirector.url, token: 'pat-na1-test' });
    // The read only informs: the redirect answer leaves the clock unknown, and nothing else.
    await client.learnPortalClock();
    expect(redirector.seen.map((s) => s.url)).toEqual(['/account-info/v3/details']);
    expect(trap.seen).toEqual([]);
  });

  it("is not followed by the service's client (integration key)", async () => {
    const api = createClient({
      baseUrl: `${redirector.url}/api/v1/`,
      auth: apiKeyAuth('ik_redirect_test_key'),
      allowInsecureLoopback: true,
    });
    const error = await refusal(() => api.leads.list({ per: 1 }));
    expect(error.message).toMatch(/check EBS_BASE_URL$/);
  });

  it('is not followed by the OAuth token exchange (code, verifier)', async () => {
    const error = await refusal(() =>
      exchangeCode({
        authUrl: redirector.url,
        clientId: 'app',
        code: 'eac_code_0123456789',
        redirectUri: 'http://127.0.0.1:1/callback',
        codeVerifier: 'v'.repeat(43),
      }),
    );
    expect(error.message).toMatch(
      /^token exchange failed: the authorization server answered 307.*check EBS_AUTH_URL$|^the authorization server answered 307.*check EBS_AUTH_URL$/,
    );
  });

  it('is not followed by the automation forwarder (signed record)', async () => {
    const codec = new EncryptionCodec([{ id: 'k1', key: randomBytes(32) }]);
    const store = sqliteAutomationStore(join(dir, 'webhooks.db'), codec);
    try {
      await store.add(endpointAt('hook', `${redirector.url}/hook`));
      const result = await forwardOnce(store, 'w-1');
      // A redirect is the endpoint's answer, a refusal: nothing is re-sent anywhere.
      expect(result).toEqual({ delivered: 0, refused: 1 });
      expect(redirector.seen).toHaveLength(1);
      expect(trap.seen).toEqual([]);
      // The delivery log says why, without either address (the URL may carry a token).
      const [entry] = store.deliveries({ endpoint: 'hook', limit: 5 });
      expect(entry).toMatchObject({
        status: 'rejected',
        httpStatus: 307,
        reason:
          "answered 307, a redirect to another origin, which ebsync does not follow: a signed change goes to the endpoint's origin only",
      });
      // A loop on the endpoint's origin ends after the hops allowed: a failed attempt (tried
      // again later, as for no answer), which says so.
      redirector.seen.length = 0;
      await store.add(endpointAt('loop', `${redirector.url}/loop`));
      store.remove('hook');
      await expect(forwardOnce(store, 'w-2')).rejects.toThrow(
        'automation endpoints not reached yet: loop',
      );
      expect(redirector.seen).toHaveLength(6);
      expect(store.deliveries({ endpoint: 'loop', limit: 5 })[0]).toMatchObject({
        status: 'failed',
        httpStatus: null,
        reason: 'redirected more than 5 times within its origin (ERR_TOO_MANY_REDIRECTS)',
      });
    } finally {
      store.close();
    }
  });

  it("is not followed by `webhooks register --sandbox-admin` (the sandbox's admin token)", async () => {
    // A connection that exists, so register goes as far as asking the sandbox.
    const stop = await standInConnection('redirect-shop');
    const result = await runCli(
      [
        'webhooks',
        'register',
        'redirect-shop',
        '--sandbox-admin',
        `${redirector.url}/admin`,
        '--admin-token',
        'adm_redirect_test_token_0123456789',
      ],
      { EBSYNC_DATA_DIR: dir, TEMPORAL_ADDRESS: inject('temporalAddress') },
    ).finally(stop);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/the sandbox refused the registration: HTTP 307/);
    expect(trap.seen).toEqual([]);
  });
});

describe('a 3xx that names nowhere to go', () => {
  it('is refused by the Pipedrive client, saying so rather than naming an origin', async () => {
    const client = new PipedriveClient({ baseUrl: `${redirector.url}/nowhere`, token: 'pd-tok' });
    const error = await client.call('GET', '/v1/persons').then(
      () => new Error('expected a refusal'),
      (e: unknown) => e as Error,
    );
    expect(error.name).toBe('DestinationTargetError');
    expect(error.message).toContain('answered 300, a redirect with no Location to follow');
    expect(error.message).not.toContain('credentials');
  });

  it('is logged by the automation forwarder as such, without either address', async () => {
    const codec = new EncryptionCodec([{ id: 'k1', key: randomBytes(32) }]);
    const store = sqliteAutomationStore(join(dir, 'nowhere.db'), codec);
    try {
      await store.add(endpointAt('hook', `${redirector.url}/nowhere`));
      expect(await forwardOnce(store, 'w-1')).toEqual({ delivered: 0, refused: 1 });
      expect(store.deliveries({ endpoint: 'hook', limit: 5 })[0]).toMatchObject({
        status: 'rejected',
        httpStatus: 300,
        reason: 'answered 300, a redirect with no Location to follow',
      });
    } finally {
      store.close();
    }
  });
});

describe('a redirect within the origin', () => {
  it('is followed, and answered there', async () => {
    const client = new PipedriveClient({ baseUrl: redirector.url, token: 'pd-token-123456' });
    const answer = await client.call('GET', '/same-origin/v1/persons');
    expect(answer).toEqual({ status: 200, body: { success: true, data: { landed: true } } });
    expect(redirector.seen.map((s) => [s.url, s.headers['x-api-token']])).toEqual([
      ['/same-origin/v1/persons', 'pd-token-123456'],
      ['/landed', 'pd-token-123456'],
    ]);
    expect(trap.seen).toEqual([]);
  });
});
