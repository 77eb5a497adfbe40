import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient } from '../../api/client.js';
import { ClientConfigError } from '../../api/transport.js';
import { apiKeyAuth } from '../../api/auth.js';
import { NotFoundError } from '../../api/errors.js';
import { ROUTES, withRouteOverrides } from '../../api/routes.js';
import { loadStartupConfig } from '../../cli/startup-config.js';
import { loadConfig, ConfigError } from '../../config/index.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';

let sb: Sandbox;
beforeAll(async () => {
  sb = await startSandbox();
});
afterAll(async () => {
  await sb.close();
});

describe('route overrides (EBS_ROUTE_OVERRIDES)', () => {
  it('re-point an assumed route: the client sends the overridden method and path', async () => {
    const api = createClient({
      baseUrl: sb.baseUrl,
      auth: apiKeyAuth(sb.apiKey),
      ca: readFileSync(sb.caFile ?? ''),
      routeOverrides: { 'expenses.get': 'GET /api/v1/spending/{id}' },
    });
    expect(api.transport.route('expenses.get')).toMatchObject({
      method: 'GET',
      path: '/api/v1/spending/{id}',
    });
    // The sandbox serves the spec's assumed path, so the overridden one is unknown to it.
    const error = await api.expenses.get(1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).reason).toBe('route_not_found');
  });

  it('refuse to override a route the spec gives, or an unknown id, or to change its placeholders', () => {
    expect(() => withRouteOverrides({ 'leads.get': 'GET /x' })).toThrow(/given by the spec/);
    expect(() => withRouteOverrides({ 'leads.nope': 'GET /x' })).toThrow(
      /unknown route 'leads.nope'/,
    );
    // The calls fill the table's placeholders: a path with others could never be sent.
    expect(() =>
      withRouteOverrides({ 'expenses.get': 'GET /api/v1/spending/{expense_id}' }),
    ).toThrow(/must keep the placeholders of \/api\/v1\/expenses\/\{id\} \(\{id\}\)/);
    expect(() => withRouteOverrides({ 'expenses.get': 'GET /api/v1/spending' })).toThrow(
      /must keep the placeholders/,
    );
    expect(ROUTES.filter((r) => r.source === 'assumed').length).toBeGreaterThan(20);
  });

  it('are read from the environment as JSON and checked for shape when the settings load', () => {
    const config = loadConfig({
      EBS_ROUTE_OVERRIDES: '{"leadBookings.update":"PUT /api/v1/lead_bookings/{lead_booking_id}"}',
    });
    expect(config.service.routeOverrides).toEqual({
      'leadBookings.update': 'PUT /api/v1/lead_bookings/{lead_booking_id}',
    });
    expect(() => loadConfig({ EBS_ROUTE_OVERRIDES: '[1]' })).toThrow(ConfigError);
    expect(() => loadConfig({ EBS_ROUTE_OVERRIDES: '{"leadBookings.update":"FETCH /y"}' })).toThrow(
      /must look like/,
    );
    expect(() => loadConfig({ EBS_ROUTE_OVERRIDES: '{"x":"GET /api/v1/y"}' })).toThrow(
      /^EBS_ROUTE_OVERRIDES=.* is not allowed: route override names 'x', not a route id/,
    );
    expect(() => loadConfig({ EBS_ROUTE_OVERRIDES: '{"x":' })).toThrow(ConfigError);
  });

  it('stop a command at start, one line naming the setting, when the route table refuses them', () => {
    const refused: [string, RegExp][] = [
      ['{"leads.nope":"GET /api/v1/y"}', /unknown route 'leads.nope'/],
      ['{"leads.get":"GET /api/v1/y/{lead_id}"}', /given by the spec/],
      ['{"expenses.get":"GET /api/v1/spending/{expense_id}"}', /must keep the placeholders/],
    ];
    for (const [value, why] of refused) {
      const env = { EBS_ROUTE_OVERRIDES: value };
      // Shape is config's to judge; the table is api's, checked where a command starts.
      expect(loadConfig(env).service.routeOverrides).toBeDefined();
      const error = (() => {
        try {
          loadStartupConfig(env);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error, value).toBeInstanceOf(ConfigError);
      const lines = (error as ConfigError).lines;
      expect(lines, value).toHaveLength(1);
      expect(lines[0], value).toMatch(/^EBS_ROUTE_OVERRIDES='\{.*\}' is not allowed: /);
      expect(lines[0], value).toMatch(why);
    }
    expect(
      loadStartupConfig({ EBS_ROUTE_OVERRIDES: '{"expenses.get":"GET /api/v1/spending/{id}"}' })
        .service.routeOverrides,
    ).toEqual({ 'expenses.get': 'GET /api/v1/spending/{id}' });
  });

  describe('stay under the base URL and /api/v1/', () => {
    const escapes = [
      '//attacker.example/x/{id}',
      '/api/v1//attacker.example/x/{id}',
      '/api/v1/../../admin/{id}',
      '/api/v1/%2e%2e/%2e%2e/admin/{id}',
      '/api/v1/spending\\..\\..\\admin/{id}',
      '/api/v2/expenses/{id}',
      '/api/v1/expenses/{id}?next=https://attacker.example',
      '/api/v1/expenses/{id}#x',
      '/api/v1/',
    ];

    it.each(escapes)('EBS_ROUTE_OVERRIDES refuses %j at load', (path) => {
      const env = { EBS_ROUTE_OVERRIDES: JSON.stringify({ 'expenses.get': `GET ${path}` }) };
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(/^EBS_ROUTE_OVERRIDES=.*must stay under \/api\/v1\//);
    });

    it('the client refuses them and sends no request, so no credential leaves for another host', async () => {
      const seen: IncomingHttpHeaders[] = [];
      const attacker = createServer((request, response) => {
        seen.push(request.headers);
        response.end('{}');
      });
      await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
      const { port } = attacker.address() as AddressInfo;
      try {
        for (const path of [`//127.0.0.1:${port}/x/{id}`, ...escapes]) {
          expect(
            () =>
              createClient({
                baseUrl: sb.baseUrl,
                auth: apiKeyAuth(sb.apiKey),
                ca: readFileSync(sb.caFile ?? ''),
                routeOverrides: { 'expenses.get': `GET ${path}` },
              }),
            path,
          ).toThrow(ClientConfigError);
        }
        expect(seen).toEqual([]);
      } finally {
        await new Promise((resolve) => attacker.close(resolve));
      }
    });
  });
});
