import type { FastifyInstance } from 'fastify';
import { unauthorized } from './errors.js';
import type { SandboxAdmin } from './admin.js';
import {
  schemas,
  parseBody,
  pathId,
  queryFlag,
  queryInt,
  recordType,
  definedOnly,
} from './admin-input.js';

/**
 * The /admin HTTP routes (header x-admin-token): each calls SandboxAdmin and answers the
 * snake_case JSON its method returns; bodies are checked by admin-input.ts.
 *
 *   POST   /admin/businesses              { name, time_zone?, currency?, owner?: { name, email } }
 *   GET    /admin/businesses
 *   PATCH  /admin/businesses/:id          { suspended }
 *   POST   /admin/users                   { business_id?, name, email, role?, permissions? }
 *   GET    /admin/users?business_id=
 *   POST   /admin/keys                    { user_id?, name?, permissions? } → plaintext key once
 *   GET    /admin/keys?business_id=
 *   DELETE /admin/keys/:id                revoke
 *   POST   /admin/apps                    { name, redirect_uris, permissions }
 *   GET    /admin/apps
 *   POST   /admin/apps/:id/install        { business_id?, user_id? } → tokens, no browser
 *   POST   /admin/apps/:id/uninstall      { business_id } → every grant of the app there
 *   GET    /admin/grants?app_id=&business_id=
 *   DELETE /admin/grants/:id              disconnect
 *   GET    /admin/oauth, PATCH /admin/oauth { auto_approve?, installing_user_id? }
 *   GET    /admin/records/:type/:id
 *   PATCH  /admin/records/:type/:id       { attributes: { … } } (through ctx.records.update)
 *   DELETE /admin/records/:type/:id       soft delete (?hard=true: gone for good)
 *   POST   /admin/webhooks                { url, business_id?, types?, secret? }
 *   GET    /admin/webhooks, DELETE /admin/webhooks/:id
 *   GET    /admin/webhooks/deliveries?endpoint_id=&limit=
 *   GET    /admin/faults, PATCH /admin/faults { error_rate?, error_statuses?, latency_ms?, drop_rate? },
 *   DELETE /admin/faults                  all off
 *   GET    /admin/rate-limit, PATCH /admin/rate-limit { per_second?, mode? }
 *   GET    /admin/counters, DELETE /admin/counters (reset)
 *   GET    /admin/clock, POST /admin/clock/advance { ms? , seconds? }
 */
function registerRoutes(app: FastifyInstance, admin: SandboxAdmin): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.headers['x-admin-token'];
    const token = Array.isArray(header) ? header[0] : header;
    if (token === undefined) {
      done(unauthorized('admin_token_missing', 'Send the x-admin-token header'));
      return;
    }
    if (!admin.accepts(token)) {
      done(unauthorized('admin_token_invalid', 'The x-admin-token is not valid'));
      return;
    }
    done();
  });

  app.get('/', () => ({
    business_id: admin.businesses()[0]?.id ?? null,
    clock: admin.clock().now,
    oauth: admin.oauthSettings(),
    faults: admin.faults(),
    rate_limit: admin.rateLimit(),
  }));

  app.post('/businesses', (request, reply) => {
    const body = parseBody(schemas.business, request.body);
    return reply.code(201).send(
      admin.createBusiness({
        name: body.name,
        ...definedOnly({ timeZone: body.time_zone, currency: body.currency, owner: body.owner }),
      }),
    );
  });
  app.get('/businesses', () => ({ data: admin.businesses() }));
  app.patch('/businesses/:id', (request) =>
    admin.setSuspended(pathId(request), parseBody(schemas.businessPatch, request.body).suspended),
  );

  app.post('/users', (request, reply) => {
    const body = parseBody(schemas.user, request.body);
    return reply.code(201).send(
      admin.createUser({
        name: body.name,
        email: body.email,
        ...definedOnly({
          businessId: body.business_id,
          role: body.role,
          permissions: body.permissions,
        }),
      }),
    );
  });
  app.get('/users', (request) => ({ data: admin.users(queryInt(request, 'business_id')) }));

  app.post('/keys', (request, reply) => {
    const body = parseBody(schemas.key, request.body);
    return reply
      .code(201)
      .send(
        admin.createKey(
          definedOnly({ userId: body.user_id, name: body.name, permissions: body.permissions }),
        ),
      );
  });
  app.get('/keys', (request) => ({ data: admin.keys(queryInt(request, 'business_id')) }));
  app.delete('/keys/:id', (request) => {
    admin.revokeKey(pathId(request));
    return { revoked: true };
  });

  app.post('/apps', (request, reply) => {
    const body = parseBody(schemas.app, request.body);
    return reply.code(201).send(
      admin.createApp({
        name: body.name,
        redirectUris: body.redirect_uris,
        permissions: body.permissions,
      }),
    );
  });
  app.get('/apps', () => ({ data: admin.apps() }));
  app.post('/apps/:id/install', (request, reply) => {
    const body = parseBody(schemas.install, request.body);
    return reply.code(201).send(
      admin.install({
        appId: pathId(request),
        ...definedOnly({ businessId: body.business_id, userId: body.user_id }),
      }),
    );
  });
  app.post('/apps/:id/uninstall', (request) => {
    const body = parseBody(schemas.uninstall, request.body);
    return { data: admin.uninstall({ appId: pathId(request), businessId: body.business_id }) };
  });
  app.get('/grants', (request) => ({
    data: admin.grants(
      definedOnly({
        appId: queryInt(request, 'app_id'),
        businessId: queryInt(request, 'business_id'),
      }),
    ),
  }));
  app.delete('/grants/:id', (request) => admin.disconnect(pathId(request)));
  app.get('/oauth', () => admin.oauthSettings());
  app.patch('/oauth', (request) => {
    const body = parseBody(schemas.oauth, request.body);
    return admin.setOAuthSettings(
      definedOnly({ autoApprove: body.auto_approve, installingUserId: body.installing_user_id }),
    );
  });

  app.get('/records/:type/:id', (request) => admin.record(recordType(request), pathId(request)));
  app.patch('/records/:type/:id', (request) => {
    const type = recordType(request);
    const recordId = pathId(request);
    const body = parseBody(schemas.recordPatch, request.body);
    return admin.patchRecord(type, recordId, body.attributes);
  });
  app.delete('/records/:type/:id', (request) => {
    const type = recordType(request);
    const recordId = pathId(request);
    admin.deleteRecord(type, recordId, { hard: queryFlag(request, 'hard') });
    return { deleted: true };
  });

  app.post('/webhooks', (request, reply) => {
    const body = parseBody(schemas.webhook, request.body);
    return reply.code(201).send(
      admin.addWebhook({
        url: body.url,
        ...definedOnly({ businessId: body.business_id, types: body.types, secret: body.secret }),
      }),
    );
  });
  app.get('/webhooks', (request) => ({ data: admin.webhooks(queryInt(request, 'business_id')) }));
  app.get('/webhooks/deliveries', (request) => ({
    data: admin.deliveries(
      definedOnly({
        endpointId: queryInt(request, 'endpoint_id'),
        limit: queryInt(request, 'limit'),
      }),
    ),
  }));
  app.delete('/webhooks/:id', (request) => {
    admin.deleteWebhook(pathId(request));
    return { deleted: true };
  });

  app.get('/faults', () => admin.faults());
  app.patch('/faults', (request) => {
    const body = parseBody(schemas.faults, request.body);
    return admin.setFaults(
      definedOnly({
        errorRate: body.error_rate,
        errorStatuses: body.error_statuses,
        latencyMs: body.latency_ms,
        dropRate: body.drop_rate,
      }),
    );
  });
  app.delete('/faults', () => admin.clearFaults());

  app.get('/rate-limit', () => admin.rateLimit());
  app.patch('/rate-limit', (request) => {
    const body = parseBody(schemas.rateLimit, request.body);
    return admin.setRateLimit(definedOnly({ perSecond: body.per_second, mode: body.mode }));
  });

  app.get('/counters', () => admin.counters());
  app.delete('/counters', () => admin.resetCounters());

  app.get('/clock', () => admin.clock());
  app.post('/clock/advance', (request) => {
    const body = parseBody(schemas.clock, request.body);
    return admin.advanceClock(body.ms ?? Math.round((body.seconds ?? 0) * 1000));
  });
}

/** The admin API's routes under /admin, as a plugin of the sandbox's server. */
export function adminPlugin(admin: SandboxAdmin): (app: FastifyInstance) => void {
  return (root) => {
    void root.register(
      (app, _opts, done) => {
        registerRoutes(app, admin);
        done();
      },
      { prefix: '/admin' },
    );
  };
}
