import { generateKeyPairSync, randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerCrmAdmin, type FakeRecords, type FakeSwitches } from './admin.js';
import { registerHubSpotAdmin } from './hubspot/admin.js';
import { registerHubSpotRoutes } from './hubspot/routes.js';
import { HubSpotState } from './hubspot/state.js';
import { registerPipedriveRoutes } from './pipedrive/routes.js';
import { PIPEDRIVE_ENTITIES, PipedriveState, type PipedriveEntity } from './pipedrive/state.js';
import { registerSalesforceAdmin } from './salesforce/admin.js';
import { registerSalesforceRoutes } from './salesforce/routes.js';
import { SalesforceState } from './salesforce/state.js';
import type { CrmFakeName } from './names.js';

export type { CrmFakeName } from './names.js';

export interface CrmFakeOptions {
  host?: string;
  port?: number;
  /** The credential the fake accepts (default: a random one). */
  token?: string;
  /** Guards the fake's `/_admin` routes (the sandbox passes its own). */
  adminToken: string;
}

interface Fake<Name extends CrmFakeName, State> {
  name: Name;
  /** Stands for the vendor's API origin: plain HTTP on loopback. */
  baseUrl: string;
  /** The token the fake accepts (Salesforce: the connected app's refresh token). */
  token: string;
  /** The ebsync settings that point at this fake, as environment variables. */
  settings: Record<string, string>;
  /** In-process access to what the admin routes show and switch. */
  state: State;
  close(): Promise<void>;
}
export type HubSpotFake = Fake<'hubspot', HubSpotState>;
export type PipedriveFake = Fake<'pipedrive', PipedriveState>;
export type SalesforceFake = Fake<'salesforce', SalesforceState> & {
  clientId: string;
  clientSecret: string;
  /** The user the JWT bearer flow acts as. */
  username: string;
  /** PEM private key of the app's certificate, to sign JWT bearer assertions. */
  privateKey: string;
};
export type CrmFake = HubSpotFake | PipedriveFake | SalesforceFake;

/** One fake on its own port: the vendor's routes at the root, its switches under `/_admin`. */
async function serveFake<Name extends CrmFakeName, State>(
  name: Name,
  token: string,
  state: State,
  options: CrmFakeOptions,
  routes: (scope: FastifyInstance) => void,
  admin: (scope: FastifyInstance) => void,
): Promise<Fake<Name, State>> {
  const app = Fastify({ logger: false, bodyLimit: 8 * 1024 * 1024 });
  await app.register((scope, _opts, done) => {
    routes(scope);
    done();
  });
  await app.register(
    (scope, _opts, done) => {
      admin(scope);
      done();
    },
    { prefix: '/_admin' },
  );
  const host = options.host ?? '127.0.0.1';
  await app.listen({ port: options.port ?? 0, host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const shown = host.includes(':') ? `[${host}]` : host;
  const baseUrl = `http://${shown}:${port}`;
  const prefix = `EBSYNC_${name.toUpperCase()}`;
  return {
    name,
    baseUrl,
    token,
    settings: { [`${prefix}_URL`]: baseUrl, [`${prefix}_TOKEN`]: token },
    state,
    close: () => app.close(),
  };
}

/** A HubSpot portal (stands for https://api.hubapi.com). */
export function startHubSpotFake(options: CrmFakeOptions): Promise<HubSpotFake> {
  const token = options.token ?? `pat-sandbox-${randomBytes(12).toString('hex')}`;
  const state = new HubSpotState(token);
  return serveFake(
    'hubspot',
    token,
    state,
    options,
    (scope) => registerHubSpotRoutes(scope, state),
    (scope) => registerHubSpotAdmin(scope, state, options.adminToken),
  );
}

/** A Pipedrive company (stands for https://api.pipedrive.com); its token is 40 hex digits. */
export function startPipedriveFake(options: CrmFakeOptions): Promise<PipedriveFake> {
  const token = options.token ?? randomBytes(20).toString('hex');
  const state = new PipedriveState(token);
  const shown: FakeRecords = {
    recordTypes: PIPEDRIVE_ENTITIES,
    records: (type) => [...state.records[type as PipedriveEntity].values()],
    views: {
      fields: () => ({
        personFields: [...state.fields.persons.values()],
        dealFields: [...state.fields.deals.values()],
      }),
    },
  };
  return serveFake(
    'pipedrive',
    token,
    state,
    options,
    (scope) => registerPipedriveRoutes(scope, state),
    (scope) => registerCrmAdmin(scope, state satisfies FakeSwitches, shown, options.adminToken),
  );
}

/**
 * A Salesforce org (stands for https://login.salesforce.com and the org's instance): its
 * connected app takes the refresh-token grant, and the token answer's instance_url is the
 * fake itself.
 */
export async function startSalesforceFake(options: CrmFakeOptions): Promise<SalesforceFake> {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const app = {
    username: 'integration@ebsync.example',
    certificate: keys.publicKey,
    clientId: `3MVG9fake${randomBytes(16).toString('hex')}`,
    clientSecret: randomBytes(32).toString('hex').toUpperCase(),
    refreshToken: options.token ?? `5Aep861fake${randomBytes(24).toString('base64url')}`,
  };
  const state = new SalesforceState(app);
  let instanceUrl = '';
  const fake = await serveFake(
    'salesforce',
    app.refreshToken,
    state,
    options,
    (scope) => registerSalesforceRoutes(scope, state, () => instanceUrl),
    (scope) => registerSalesforceAdmin(scope, state, options.adminToken),
  );
  instanceUrl = fake.baseUrl;
  return {
    ...fake,
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    username: app.username,
    privateKey: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    settings: {
      EBSYNC_SALESFORCE_URL: fake.baseUrl,
      EBSYNC_SALESFORCE_CLIENT_ID: app.clientId,
      EBSYNC_SALESFORCE_CLIENT_SECRET: app.clientSecret,
      EBSYNC_SALESFORCE_REFRESH_TOKEN: app.refreshToken,
    },
  };
}

const STARTERS: Record<CrmFakeName, (options: CrmFakeOptions) => Promise<CrmFake>> = {
  hubspot: startHubSpotFake,
  pipedrive: startPipedriveFake,
  salesforce: startSalesforceFake,
};

export async function startCrmFakes(
  names: readonly CrmFakeName[],
  options: CrmFakeOptions,
): Promise<CrmFake[]> {
  const started: CrmFake[] = [];
  try {
    for (const name of names) {
      started.push(await STARTERS[name](options));
    }
  } catch (error) {
    await Promise.allSettled(started.map((f) => f.close()));
    throw error;
  }
  return started;
}
