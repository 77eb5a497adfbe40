import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionTokens } from '../../activities/connection-tokens.js';
import { loadConfig } from '../../config/index.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { createMirrorDeps } from '../../worker/mirror-deps.js';
import { connectionWorkflow } from '../../workflows/connection.js';
import {
  connectionWorkflowId,
  reconnectUpdate,
  type ConnectionInput,
} from '../../workflows/connection-types.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';

/**
 * A pass asked for right after a reconnect carries the connection's new credentials version,
 * and a worker that still holds the old credentials (it checks at most once a second) asks the
 * connection's workflow before the pass's first request: the pass reads the business the
 * connection now names, never the one it named before.
 */
let temporal: TemporalHarness;
let before: Sandbox;
let after: Sandbox;

beforeAll(async () => {
  temporal = await connectTemporal();
  before = await startSandbox({ http: true, seed: { leads: 3, events: 0 } });
  after = await startSandbox({ http: true, seed: { leads: 7, events: 0 } });
}, 60_000);

afterAll(async () => {
  await before?.close();
  await after?.close();
  await temporal?.close();
});

/** A connection on `taskQueue` holding `sandbox`'s key, and a worker's deps for it. */
async function connectionOn(taskQueue: string, name: string, sandbox: Sandbox) {
  const input: ConnectionInput = {
    profile: {
      connectionId: name,
      kind: 'integration_key',
      baseUrl: sandbox.baseUrl,
      permissions: [],
    },
    credentials: { kind: 'apiKey', apiKey: sandbox.apiKey },
  };
  const handle = await temporal.client.workflow.start(connectionWorkflow, {
    workflowId: connectionWorkflowId(name),
    taskQueue,
    args: [input],
  });
  const tokens = new ConnectionTokens(temporal.client);
  // Checked once a minute at most unless a pass says otherwise: without the version, the
  // worker's old client would be used whatever the time the reconnect takes.
  const deps = createMirrorDeps(
    loadConfig({ EBS_ALLOW_HTTP: 'true', EBSYNC_DATA_DIR: `/tmp/unused-${name}` }),
    temporal.client,
    tokens,
    undefined,
    {},
    undefined,
    60_000,
  );
  const leadsVia = async (version?: number): Promise<number> =>
    (await (await deps.clientFor(name, version)).leads.list({ per: 100 })).data.length;
  const close = async () => {
    await deps.close();
    await handle.terminate('test over').catch(() => undefined);
  };
  return { handle, tokens, leadsVia, close };
}

describe('a pass carrying the credentials version', () => {
  it('reads the new business at once after a reconnect the worker had not seen', async () => {
    const taskQueue = temporal.taskQueue();
    const name = `moved-${randomUUID().slice(0, 8)}`;
    await temporal.withWorker({ taskQueue, activities: {} }, async () => {
      const { handle, tokens, leadsVia, close } = await connectionOn(taskQueue, name, before);
      try {
        expect(await leadsVia()).toBe(3);
        const status = await handle.executeUpdate(reconnectUpdate, {
          args: [
            {
              credentials: { kind: 'apiKey', apiKey: after.apiKey },
              service: { kind: 'integration_key', baseUrl: after.baseUrl },
            },
          ],
        });
        expect(status.credentialsVersion).toBeGreaterThan(0);
        // Without the version, the worker's old client: its last check is recent.
        expect(await leadsVia()).toBe(3);
        expect(await leadsVia(status.credentialsVersion)).toBe(7);
        expect(tokens.versionOf(name)).toBe(status.credentialsVersion);
        // Asked once per version: later activities of the pass cost no query.
        const queries = tokens.queriesSent;
        expect(await leadsVia(status.credentialsVersion)).toBe(7);
        expect(tokens.queriesSent).toBe(queries);
      } finally {
        await close();
      }
    });
  }, 60_000);

  it('asks once, not at every activity, when the connection is behind the pass (made anew)', async () => {
    const taskQueue = temporal.taskQueue();
    const name = `anew-${randomUUID().slice(0, 8)}`;
    await temporal.withWorker({ taskQueue, activities: {} }, async () => {
      const { tokens, leadsVia, close } = await connectionOn(taskQueue, name, before);
      try {
        expect(await leadsVia()).toBe(3);
        const queries = tokens.queriesSent;
        // A pass started under version 5 of a connection since made again (now at 0).
        expect(await leadsVia(5)).toBe(3);
        expect(tokens.queriesSent).toBe(queries + 1);
        expect(await leadsVia(5)).toBe(3);
        expect(await leadsVia(5)).toBe(3);
        expect(tokens.queriesSent).toBe(queries + 1);
      } finally {
        await close();
      }
    });
  }, 60_000);
});
