import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import { registerHubSpotAdmin } from './hubspot/admin.js';
import { registerHubSpotRoutes } from './hubspot/routes.js';
import { HubSpotState } from './hubspot/state.js';

/** The CRMs with a local fake; `ebsync sandbox --crm` takes a list of these. */
export const CRM_FAKES = ['hubspot'] as const;
export type CrmFakeName = (typeof CRM_FAKES)[number];

export interface CrmFakeOptions {
  host?: string;
  port?: number;
  /** The credential the fake accepts (default: a random one). */
  token?: string;
  /** Guards the fake's `/_admin` routes (the sandbox passes its own). */
  adminToken: string;
}

export interface HubSpotFake {
  name: 'hubspot';
  /** Stands for https://api.hubapi.com: plain HTTP on loopback. */
  baseUrl: string;
  /** The private-app token the fake accepts. */
  token: string;
  /** In-process access to what the admin routes show and switch. */
  state: HubSpotState;
  close(): Promise<void>;
}

/**
 * A HubSpot portal on its own port: the CRM routes at the root (as at api.hubapi.com), the
 * fake's switches under `/_admin`.
 */
export async function startHubSpotFake(options: CrmFakeOptions): Promise<HubSpotFake> {
  const token = options.token ?? `pat-sandbox-${randomBytes(12).toString('hex')}`;
  const state = new HubSpotState(token);
  const app = Fastify({ logger: false, bodyLimit: 8 * 1024 * 1024 });
  await app.register((scope, _opts, done) => {
    registerHubSpotRoutes(scope, state);
    done();
  });
  await app.register(
    (scope, _opts, done) => {
      registerHubSpotAdmin(scope, state, options.adminToken);
      done();
    },
    { prefix: '/_admin' },
  );
  const host = options.host ?? '127.0.0.1';
  await app.listen({ port: options.port ?? 0, host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    name: 'hubspot',
    baseUrl: `http://${shown}:${port}`,
    token,
    state,
    close: () => app.close(),
  };
}

export type CrmFake = HubSpotFake;

export async function startCrmFakes(
  names: readonly CrmFakeName[],
  options: CrmFakeOptions,
): Promise<CrmFake[]> {
  const started: CrmFake[] = [];
  try {
    for (const name of names) {
      if (name === 'hubspot') started.push(await startHubSpotFake(options));
    }
  } catch (error) {
    await Promise.allSettled(started.map((f) => f.close()));
    throw error;
  }
  return started;
}
