import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerCrmAdmin, type FakeRecords, type FakeSwitches } from './admin.js';
import { registerHubSpotAdmin } from './hubspot/admin.js';
import { registerHubSpotRoutes } from './hubspot/routes.js';
import { HubSpotState } from './hubspot/state.js';
import { registerPipedriveRoutes } from './pipedrive/routes.js';
import { PIPEDRIVE_ENTITIES, PipedriveState, type PipedriveEntity } from './pipedrive/state.js';

/** The CRMs with a local fake; `ebsync sandbox --crm` takes a list of these. */
export const CRM_FAKES = ['hubspot', 'pipedrive'] as const;
export type CrmFakeName = (typeof CRM_FAKES)[number];

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
  /** The token the fake accepts. */
  token: string;
  /** In-process access to what the admin routes show and switch. */
  state: State;
  close(): Promise<void>;
}
export type HubSpotFake = Fake<'hubspot', HubSpotState>;
export type PipedriveFake = Fake<'pipedrive', PipedriveState>;
export type CrmFake = HubSpotFake | PipedriveFake;

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
  return { name, baseUrl: `http://${shown}:${port}`, token, state, close: () => app.close() };
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

export async function startCrmFakes(
  names: readonly CrmFakeName[],
  options: CrmFakeOptions,
): Promise<CrmFake[]> {
  const started: CrmFake[] = [];
  try {
    for (const name of names) {
      started.push(
        name === 'hubspot' ? await startHubSpotFake(options) : await startPipedriveFake(options),
      );
    }
  } catch (error) {
    await Promise.allSettled(started.map((f) => f.close()));
    throw error;
  }
  return started;
}
