import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantLeftLive } from '../../cli/connections.js';
import { connectionWorkflow } from '../../workflows/connection.js';
import {
  type ConnectionInput,
  type ConnectionStatus,
  credentialsRejectedUpdate,
  disconnectUpdate,
  getCredentialsUpdate,
  reconnectUpdate,
  statusQuery,
} from '../../workflows/connection-types.js';
import {
  CONNECTION_SCENARIOS,
  fakeConnectionActivities,
  refreshesSeen,
  rotated,
} from '../fixtures/connection-scenarios.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';

/**
 * The connection workflow on the real dev server with a fake OAuth server: every scenario
 * that test/fixtures/record-histories.ts records does what it claims, and refresh timing is
 * read from the timers and timestamps of the history instead of waited for.
 *
 * Why not a time-skipping environment: TestWorkflowEnvironment.createTimeSkipping needs
 * Temporal's separate test-server binary, which the SDK downloads from GitHub releases (it
 * accepts an existing path, but no registry this project can use ships one); the Temporal
 * CLI's dev server does not skip time. So timers are checked where they are set, and the one
 * refresh that must really fire uses a 4 s token.
 */
let t: TemporalHarness;
let taskQueue: string;
beforeAll(async () => {
  t = await connectTemporal();
  taskQueue = t.taskQueue();
});
afterAll(async () => {
  await t.close();
});

const run = <T>(fn: () => Promise<T>): Promise<T> =>
  t.withWorker({ taskQueue, activities: fakeConnectionActivities }, fn);

function oauthInput(connectionId: string, lifetimeMs: number): ConnectionInput {
  const now = Date.now();
  return {
    profile: {
      connectionId,
      kind: 'installed_app',
      baseUrl: 'https://svc.example/api/v1/',
      permissions: [],
    },
    credentials: {
      kind: 'oauth',
      accessToken: 'at-0',
      refreshToken: 'rt-0',
      accessIssuedAt: now,
      accessExpiresAt: now + lifetimeMs,
    },
  };
}

const seconds = (d: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  Number(d?.seconds ?? 0) + (d?.nanos ?? 0) / 1e9;

describe('connectionWorkflow scenarios', () => {
  it.each(CONNECTION_SCENARIOS.map((s) => [s.name, s] as const))(
    '%s: does what it claims, ends disconnected, and replays',
    async (name, scenario) => {
      const workflowId = `${name}-${taskQueue}`;
      await run(async () => {
        const handle = await t.client.workflow.start(connectionWorkflow, {
          taskQueue,
          workflowId,
          args: [scenario.input()],
        });
        await scenario.drive(handle);
        expect((await handle.result()).state).toBe('disconnected');
      });
      const histories = [];
      for await (const execution of t.client.workflow.list({
        query: `WorkflowId = '${workflowId}'`,
      }))
        histories.push({
          workflowId,
          history: await t.client.workflow.getHandle(workflowId, execution.runId).fetchHistory(),
        });
      if (name === 'connection-continue-as-new') expect(histories.length).toBeGreaterThan(1);
      else expect(histories.length).toBe(1);
      for await (const result of Worker.runReplayHistories(
        { workflowBundle: { codePath: t.bundlePath } },
        histories,
      ))
        expect(result.error).toBeUndefined();
    },
  );
});

describe('refresh timing', () => {
  it.each([
    // Refresh when 20% of the life is left, at least 2 s and at most 5 min before expiry.
    { label: '1 hour', lifetimeMs: 3_600_000, expectedSeconds: 3_300 },
    { label: '10 minute', lifetimeMs: 600_000, expectedSeconds: 480 },
    { label: '20 second', lifetimeMs: 20_000, expectedSeconds: 16 },
    { label: '5 second', lifetimeMs: 5_000, expectedSeconds: 3 },
  ])(
    'a $label token: the refresh timer is set for $expectedSeconds s after issue',
    async ({ lifetimeMs, expectedSeconds }) => {
      const workflowId = `timing-${lifetimeMs}-${taskQueue}`;
      await run(async () => {
        const handle = await t.client.workflow.start(connectionWorkflow, {
          taskQueue,
          workflowId,
          args: [oauthInput(`timing-${lifetimeMs}`, lifetimeMs)],
        });
        let timer;
        const until = Date.now() + 20_000;
        while (!timer && Date.now() < until) {
          const { events } = await handle.fetchHistory();
          timer = events?.find((e) => e.timerStartedEventAttributes)?.timerStartedEventAttributes;
        }
        // Less the moments between issue and the workflow's first task.
        const wait = seconds(timer?.startToFireTimeout);
        expect(wait).toBeLessThanOrEqual(expectedSeconds);
        expect(wait).toBeGreaterThan(expectedSeconds - 2);
        await handle.executeUpdate(disconnectUpdate);
      });
    },
  );

  it('a 4 s token is refreshed 2 s after issue, before it expires, by one refresh', async () => {
    const workflowId = `timing-live-${taskQueue}`;
    const input = oauthInput('timing-live', 4_000);
    await run(async () => {
      const handle = await t.client.workflow.start(connectionWorkflow, {
        taskQueue,
        workflowId,
        args: [input],
      });
      const until = Date.now() + 20_000;
      let scheduled;
      while (!scheduled && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 200));
        const { events } = await handle.fetchHistory();
        scheduled = events?.find((e) => e.activityTaskScheduledEventAttributes);
      }
      const at = seconds(scheduled?.eventTime) * 1000;
      if (input.credentials.kind !== 'oauth') throw new Error('oauth input expected');
      expect(at - input.credentials.accessIssuedAt).toBeGreaterThanOrEqual(1_900);
      expect(at).toBeLessThan(input.credentials.accessExpiresAt);
      await handle.executeUpdate(disconnectUpdate);
    });
    expect(refreshesSeen.get('timing-live')).toEqual(['rt-0']);
  });
});

/**
 * A connection whose token refresh hangs until released, as against an authorization server
 * that is away, running until its first refresh is under way: what it presented and revoked.
 */
async function refreshUnderWay(
  name: string,
  during: (
    handle: WorkflowHandle<typeof connectionWorkflow>,
    seen: { revoked: string[]; release: () => void },
  ) => Promise<void>,
): Promise<{ ended: ConnectionStatus; revoked: string[] }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const presented: string[] = [];
  const revoked: string[] = [];
  const activities = {
    ...fakeConnectionActivities,
    async refreshConnectionTokens(
      input: Parameters<typeof fakeConnectionActivities.refreshConnectionTokens>[0],
    ) {
      presented.push(input.refreshToken);
      await released;
      return fakeConnectionActivities.refreshConnectionTokens(input);
    },
    revokeConnectionTokens(input: { refreshToken: string }) {
      revoked.push(input.refreshToken);
      return Promise.resolve();
    },
  };
  const queue = t.taskQueue();
  const input = oauthInput(name, 3_000);
  return t.withWorker({ taskQueue: queue, activities }, async () => {
    const handle = await t.client.workflow.start(connectionWorkflow, {
      taskQueue: queue,
      workflowId: `${name}-${queue}`,
      args: [
        {
          ...input,
          profile: { ...input.profile, authUrl: 'https://auth.example', clientId: 'ebc_x' },
        },
      ],
    });
    try {
      const until = Date.now() + 20_000;
      while (presented.length === 0 && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(presented).toEqual(['rt-0']);
      await during(handle, { revoked, release });
    } finally {
      // A failure above must not leave the worker waiting on the activity.
      release();
    }
    return { ended: await handle.result(), revoked };
  });
}

describe('disconnect during a token refresh', () => {
  it('lets the refresh finish and revokes the refresh token it leaves, not the one it replaced', async () => {
    const { ended, revoked } = await refreshUnderWay('revoke-latest', async (handle, seen) => {
      const disconnecting = handle.executeUpdate(disconnectUpdate);
      await new Promise((r) => setTimeout(r, 1_000));
      // Nothing revoked while the refresh that rotates the token is under way.
      expect(seen.revoked).toEqual([]);
      seen.release();
      const status = await disconnecting;
      expect(status.state).toBe('disconnected');
      expect(status.lastError).toBeNull();
      expect(seen.revoked).toEqual(['rt-0.r']);
    });
    expect(ended.state).toBe('disconnected');
    expect(revoked).toEqual(['rt-0.r']);
  });

  it("answers within the CLI's wait when the refresh outlasts it, and revokes after it ends", async () => {
    const { ended, revoked } = await refreshUnderWay('revoke-later', async (handle, seen) => {
      const asked = Date.now();
      const status = await handle.executeUpdate(disconnectUpdate);
      // Short of the CLI's 30 s, with the revoke said to be pending, not done.
      expect(Date.now() - asked).toBeLessThan(25_000);
      expect(status.state).toBe('disconnected');
      expect(status.lastError).toMatch(/^revoke pending: /);
      expect(grantLeftLive('c', status)).toMatch(/is not revoked yet/);
      expect(seen.revoked).toEqual([]);
    });
    expect(ended.state).toBe('disconnected');
    expect(ended.lastError).toBeNull();
    expect(revoked).toEqual(['rt-0.r']);
  }, 60_000);
});

describe('a reconnect during a token refresh', () => {
  it('keeps the new credentials: the refresh of the grant they replaced does not overwrite them', async () => {
    const { ended, revoked } = await refreshUnderWay(
      'reconnect-mid-refresh',
      async (handle, seen) => {
        // An activity asks while the refresh is under way, and waits for it.
        const asked = handle.executeUpdate(getCredentialsUpdate, { args: [{}] });
        await new Promise((r) => setTimeout(r, 500));
        await handle.executeUpdate(reconnectUpdate, {
          args: [
            {
              credentials: { kind: 'apiKey', apiKey: 'ik_new' },
              service: { kind: 'integration_key', baseUrl: 'https://svc.example/api/v1/' },
            },
          ],
        });
        seen.release();
        // It gets the new key, not a failure for good ('credentials changed kind').
        expect(await asked).toEqual({ kind: 'apiKey', apiKey: 'ik_new' });
        // The old grant's refresh ends after the reconnect: it used to put that grant's tokens
        // back, an OAuth token under an integration_key profile, the new key forgotten.
        await new Promise((r) => setTimeout(r, 2_000));
        const status = await handle.query(statusQuery);
        expect(status).toMatchObject({ kind: 'integration_key', state: 'active' });
        expect(await handle.executeUpdate(getCredentialsUpdate, { args: [{}] })).toEqual({
          kind: 'apiKey',
          apiKey: 'ik_new',
        });
        await handle.executeUpdate(disconnectUpdate);
      },
    );
    expect(ended.state).toBe('disconnected');
    // A key is not revoked; nor is the replaced grant (docs/connections.md says so).
    expect(revoked).toEqual([]);
  }, 60_000);
});

describe('a reconnect during a refresh a refusal asked for', () => {
  it("gives the reconnect's token a refresh of its own at its first refusal, not needs_reauth", async () => {
    const { ended } = await refreshUnderWay('reconnect-mid-rejection', async (handle, seen) => {
      // The service refused the old token while the timer's refresh ran: the refusal waits.
      const refused = handle.executeUpdate(credentialsRejectedUpdate, {
        args: [{ rejected: 'at-0' }],
      });
      await new Promise((r) => setTimeout(r, 500));
      const now = Date.now();
      await handle.executeUpdate(reconnectUpdate, {
        args: [
          {
            credentials: {
              kind: 'oauth',
              accessToken: 'at-new',
              refreshToken: 'rt-new',
              accessIssuedAt: now,
              accessExpiresAt: now + 3_600_000,
            },
          },
        ],
      });
      seen.release();
      expect((await refused).state).toBe('active');
      // The new token was issued by the reconnect, not by a refresh after a refusal: its
      // first refusal is refreshed once (it went straight to needs_reauth).
      const after = await handle.executeUpdate(credentialsRejectedUpdate, {
        args: [{ rejected: 'at-new' }],
      });
      expect(after.state).toBe('active');
      await handle.executeUpdate(disconnectUpdate);
    });
    expect(ended.state).toBe('disconnected');
  }, 60_000);
});

describe('a service whose tokens live a second', () => {
  it('the timer refreshes every 2 s, not over and over', async () => {
    const presented: string[] = [];
    const activities = {
      ...fakeConnectionActivities,
      refreshConnectionTokens(
        input: Parameters<typeof fakeConnectionActivities.refreshConnectionTokens>[0],
      ) {
        presented.push(input.refreshToken);
        return Promise.resolve(rotated(input.refreshToken, 1));
      },
    };
    const queue = t.taskQueue();
    await t.withWorker({ taskQueue: queue, activities }, async () => {
      const handle = await t.client.workflow.start(connectionWorkflow, {
        taskQueue: queue,
        workflowId: `short-token-${queue}`,
        args: [oauthInput('short-token', 1_000)],
      });
      await new Promise((r) => setTimeout(r, 7_000));
      await handle.executeUpdate(disconnectUpdate);
      await handle.result();
    });
    // At 0, 2, 4 and 6 s (the first token is older than 2 s by the first task, perhaps):
    // it used to be a refresh as soon as the last one ended, dozens in these 7 s.
    expect(presented.length).toBeGreaterThanOrEqual(3);
    expect(presented.length).toBeLessThanOrEqual(5);
  });
});
