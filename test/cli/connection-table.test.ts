import { describe, expect, it } from 'vitest';
import { connectionTable, grantLeftLive } from '../../cli/connections.js';
import { findProblems, type ConnectionView } from '../../cli/status-model.js';
import type { ConnectionStatus } from '../../workflows/connection-types.js';

const status = (over: Partial<ConnectionStatus>): ConnectionStatus => ({
  connectionId: 'default',
  kind: 'integration_key',
  baseUrl: 'https://ebs.example/api/v1/',
  businessName: 'Acme Photo Booths',
  permissions: [],
  state: 'active',
  lastError: null,
  refreshCount: 0,
  connectedAt: 0,
  ...over,
});

describe('ebsync connections', () => {
  it('lines up its columns whatever the lengths of the names, as the docs show', () => {
    expect(
      connectionTable([
        status({
          connectionId: 'acme',
          kind: 'installed_app',
          accessExpiresAt: Date.parse('2026-11-22T10:04:11.000Z'),
        }),
        status({ connectionId: 'acme-key' }),
        status({ connectionId: 'k2', state: 'paused' }),
      ]),
    ).toBe(
      [
        'acme      active  installed_app    Acme Photo Booths, token until 2026-11-22T10:04:11.000Z',
        'acme-key  active  integration_key  Acme Photo Booths',
        'k2        paused  integration_key  Acme Photo Booths',
      ].join('\n'),
    );
  });
});

describe('ebsync disconnect', () => {
  it('fails, naming what to do, when the grant could not be revoked; not when it was, or there is none', () => {
    const failed = status({
      kind: 'installed_app',
      state: 'disconnected',
      lastError: 'revoke failed: connection refused, nothing listens there (ECONNREFUSED)',
    });
    expect(grantLeftLive('shop', failed)).toBe(
      "the grant of connection 'shop' may still be live at the service (revoke failed: connection refused, nothing listens there (ECONNREFUSED)): ebsync no longer keeps its tokens, so remove the app's access in the business's settings at the service",
    );
    expect(grantLeftLive('shop', { ...failed, lastError: null })).toBeUndefined();
    // A key has no grant to revoke: its own line says it still works.
    expect(grantLeftLive('key', { ...failed, kind: 'integration_key' })).toBeUndefined();
  });
});

describe('ebsync status, of a connection whose refresh keeps failing', () => {
  it('is a problem once its token has expired, naming the reason; not before, nor without an error', () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const view = (over: Partial<ConnectionView>): ConnectionView => ({
      connectionId: 'shop',
      businessName: null,
      kind: 'installed_app',
      state: 'active',
      lastError: 'refresh failed 3 times in a row, retrying: token refresh failed: ECONNREFUSED',
      accessExpiresAt: now - 1_000,
      rateLimited: { lastHour: 0, perMinute: [] },
      workflowId: 'connection-shop',
      uiUrl: '',
      ...over,
    });
    const problems = (over: Partial<ConnectionView>) =>
      findProblems({ connections: [view(over)] }, now).map((p) => `${p.kind}: ${p.message}`);
    expect(problems({})).toEqual([
      "refresh_failing: connection shop: its access token expired at 2026-01-01T11:59:59.000Z and refreshing it fails (refresh failed 3 times in a row, retrying: token refresh failed: ECONNREFUSED); its syncs cannot read the service until a refresh succeeds (is the service's authorization server reachable?)",
    ]);
    expect(problems({ accessExpiresAt: now + 60_000 })).toEqual([]);
    expect(problems({ lastError: null })).toEqual([]);
    expect(problems({ kind: 'integration_key', accessExpiresAt: null })).toEqual([]);
  });
});
