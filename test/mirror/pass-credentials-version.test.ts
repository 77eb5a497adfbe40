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

describe('a pass carrying the credentials version', () => {
  it('reads the new business at once after a reconnect the worker had not seen', async () => {
    const taskQueue = temporal.taskQueue();
    const name = `moved-${randomUUID().slice(0, 8)}`;
    const input: ConnectionInput = {
      profile: {
        connectionId: name,
        kind: 'integration_key',
        baseUrl: before.baseUrl,
        permissions: [],
      },
      credentials: { kind: 'apiKey', apiKey: before.apiKey },
    };
    await temporal.withWorker({ taskQueue, activities: {} }, async () => {
      const handle = await temporal.client.workflow.start(connectionWorkflow, {
        workflowId: connectionWorkflowId(name),
        taskQueue,
        args: [input],
      });
      const tokens = new ConnectionTokens(temporal.client);
      const deps = createMirrorDeps(
        loadConfig({ EBS_ALLOW_HTTP: 'true', EBSYNC_DATA_DIR: `/tmp/unused-${name}` }),
        temporal.client,
        tokens,
        undefined,
      );
      const leadsVia = async (version?: number): Promise<number> =>
        (await (await deps.clientFor(name, version)).leads.list({ per: 100 })).data.length;
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
        // Within the worker's second: without the version, its old client would be used.
        expect(await leadsVia(status.credentialsVersion)).toBe(7);
        expect(tokens.versionOf(name)).toBe(status.credentialsVersion);
        // Asked once per version: later activities of the pass cost no query.
        const sent = tokens.updatesSent;
        expect(await leadsVia(status.credentialsVersion)).toBe(7);
        expect(tokens.updatesSent).toBe(sent);
      } finally {
        await deps.close();
        await handle.terminate('test over').catch(() => undefined);
      }
    });
  }, 60_000);
});
