import { isIP } from 'node:net';
import {
  isGrpcServiceError,
  ScheduleNotFoundError,
  ServiceError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { Config } from '../config/index.js';
import { CONNECTION_RULE_TEXT, isConnectionName } from '../config/connection-names.js';
import { isLoopbackHost } from '../config/loopback.js';
import {
  connectClient,
  lazyClient,
  requireNamespace,
  TemporalUnreachableError,
  withCallDeadlines,
} from '../worker/temporal-client.js';
import {
  connectionWorkflowId,
  setPausedUpdate,
  type ConnectionStatus,
} from '../workflows/connection-types.js';
import { MIRROR_SUBJECTS } from '../workflows/mirror-types.js';
import { UserError } from './errors.js';
import { listenRefusal } from './network-refusals.js';
import { causes, GRPC_DEADLINE_EXCEEDED, temporalAway } from './workflow-deadline.js';
import { REQUEST_KEPT, updateOnceAnswered } from './connection-update.js';
import {
  isScheduleId,
  pauseSchedule,
  resumeSchedule,
  ScheduleNeverFiresError,
  SCHEDULE_ID_RULE,
  triggerSchedule,
} from './schedules.js';
import { pause } from '../activities/pause.js';
import {
  collectStatus,
  publicReport,
  type ClosedRunCache,
  type StatusReport,
} from './status-model.js';
import type { RunOutcomeCache } from './status-sections.js';
import {
  loadingHtml,
  PAGE_CONTENT_SECURITY_POLICY,
  pageHtml,
  reportHtml,
  type RateSeries,
} from './status-page.js';
import { createLogger } from '../worker/logger.js';
import { sameSecret } from '../config/secret-compare.js';
import { requireWorkerOf } from './worker-check.js';
import { defaultDestination, refuseNeedsReauth, startOrAttach } from './sync.js';
import { refuseOtherWriter } from './destination-writer.js';
import { stopSignal } from './stop-signals.js';
import {
  answerClientError,
  answerNodeRefusals,
  NODE_REFUSALS_ANSWERED,
} from '../api/schemas/client-error-answer.js';

const REFRESH_MS = 2_000;
/**
 * How long each Temporal call of a refresh may take, retries included, unless it has its own
 * deadline (a query a worker must answer has 10 s): Temporal out of reach turns the report
 * stale within about this, not after the client's retries (45 to 60 s).
 */
export const REFRESH_CALL_DEADLINE_MS = 5_000;
/** The longest an action waits for a report showing its change before it answers anyway. */
const ACTION_SETTLE_MS = 20_000;
const HOUR_MS = 3_600_000;
/** How long an action waits on a workflow (a worker must answer) before it says so. */
const ACTION_DEADLINE_MS = 10_000;

export interface StatusServer {
  url: string;
  close(): Promise<void>;
}

/** The spec's general error shape. */
function refuse(
  reply: FastifyReply,
  code: number,
  status: string,
  reason: string,
  message: string,
): FastifyReply {
  return reply.code(code).send({ meta: { status: 'error' }, status, reason, message });
}

/** No worker answered a workflow in time: the action is refused, nothing half done. */
class WorkerUnavailableError extends Error {
  override readonly name = 'WorkerUnavailableError';
  readonly retryable = true;
}

/**
 * A worker answered the connection's status, then none carried the update out in time:
 * Temporal keeps the update and delivers it when a worker runs the workflow, so the request
 * is accepted (202), not refused. Not retryable: sending it again would only queue it twice.
 */
class UpdateKeptError extends Error {
  override readonly name = 'UpdateKeptError';
  readonly retryable = false;
}

interface Refusal {
  code: number;
  status: string;
  reason: string;
  message: string;
  /** Logged where the page runs: a failure the answer does not explain. */
  unexpected?: boolean;
}

/** Whether Temporal itself could not be reached or did not answer. */
function temporalUnreachable(error: unknown): boolean {
  return (
    temporalAway(error) ||
    causes(error).some(
      (e) =>
        e instanceof TemporalUnreachableError ||
        (isGrpcServiceError(e) && Number(e.code) === GRPC_DEADLINE_EXCEEDED) ||
        (e instanceof ServiceError && /deadline/i.test(e.message)),
    )
  );
}

/**
 * What the page answers for a failure, in the spec's error shape: its own status per cause,
 * a message of ours (never the raw text of a library, which can carry addresses, stack
 * frames or what a request held).
 */
function refusalOf(error: unknown, config: Config): Refusal {
  const fastify = error as { statusCode?: unknown; code?: unknown };
  if (
    typeof fastify.statusCode === 'number' &&
    fastify.statusCode >= 400 &&
    fastify.statusCode < 500
  ) {
    const code = fastify.statusCode;
    if (fastify.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return {
        code,
        status: 'unsupported_media_type',
        reason: 'unsupported_media_type',
        message: 'send no body, or application/json',
      };
    }
    if (fastify.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return {
        code,
        status: 'payload_too_large',
        reason: 'body_too_large',
        message: 'the body is too large: actions take none',
      };
    }
    if (String(fastify.code).startsWith('FST_ERR_CTP_') || error instanceof SyntaxError) {
      return {
        code,
        status: 'bad_request',
        reason: 'malformed_body',
        message: 'the body is not valid JSON: actions take none',
      };
    }
    return {
      code,
      status: 'bad_request',
      reason: 'bad_request',
      message: 'the request could not be read',
    };
  }
  if (error instanceof WorkerUnavailableError || error instanceof UserError) {
    return {
      code: 503,
      status: 'unavailable',
      reason: 'worker_unavailable',
      message: error.message,
    };
  }
  if (error instanceof WorkflowNotFoundError) {
    return {
      code: 404,
      status: 'not_found',
      reason: 'workflow_not_found',
      message: 'the workflow behind this action has ended or does not exist',
    };
  }
  if (temporalUnreachable(error)) {
    return {
      code: 503,
      status: 'unavailable',
      reason: 'temporal_unavailable',
      message: `Temporal at ${config.temporal.address} could not be reached or did not answer; the page retries on its own`,
    };
  }
  return {
    code: 503,
    status: 'unavailable',
    reason: 'unavailable',
    message:
      'the status could not be read or the action done; the log where the page runs says why',
    unexpected: true,
  };
}

const noAnswer = (what: string, sent = ''): WorkerUnavailableError =>
  new WorkerUnavailableError(
    `${what} got no answer within ${ACTION_DEADLINE_MS / 1000} s: no worker answered its workflow${sent}; start one ('ebsync worker' or 'npm start') and try again`,
  );

/** A wait on a promise this request does not own (the shared report), cut at the deadline. */
async function notLongerThan<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(noAnswer(what)), ACTION_DEADLINE_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The host names the page answers to (DNS rebinding: a page on another site that points its
 * own name at this address would otherwise read the report with the browser's help). An IP
 * address is always fine (rebinding needs a name), so are `localhost`, the listen address
 * and the names in EBSYNC_STATUS_ALLOWED_HOSTS.
 */
function hostCheck(config: Config, listenHost: string): (header: string | undefined) => boolean {
  const names = new Set(['localhost', listenHost.toLowerCase(), ...config.status.allowedHosts]);
  return (header) => {
    if (!header) return false;
    let hostname: string;
    try {
      hostname = new URL(`http://${header}`).hostname.toLowerCase();
    } catch {
      return false;
    }
    return isIP(hostname.replace(/^\[|\]$/g, '')) !== 0 || names.has(hostname);
  };
}

/** Headers of every answer: the page's script only, no framing, no sniffing, no referrer. */
const SECURITY_HEADERS = {
  'content-security-policy': PAGE_CONTENT_SECURITY_POLICY,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** Read counts of running passes over the last hour, turned into records per second. */
class RateHistory {
  private readonly samples = new Map<string, [number, number][]>();

  add(report: StatusReport): void {
    for (const m of report.mirrors) {
      const read = m.current?.progress?.counts.read;
      if (read === undefined) continue;
      const list = this.samples.get(m.workflowId) ?? [];
      list.push([report.generatedAt, read]);
      while (list.length > 0 && list[0]![0] < report.generatedAt - HOUR_MS) list.shift();
      this.samples.set(m.workflowId, list);
    }
  }

  series(): Map<string, RateSeries> {
    const out = new Map<string, RateSeries>();
    for (const [id, list] of this.samples) {
      const rates: [number, number][] = [];
      for (let i = 1; i < list.length; i++) {
        const [t0, r0] = list[i - 1]!;
        const [t1, r1] = list[i]!;
        // A new pass starts its count at zero: that step is no rate.
        if (t1 > t0 && r1 >= r0) rates.push([t1, ((r1 - r0) * 1000) / (t1 - t0)]);
      }
      out.set(id, rates);
    }
    return out;
  }
}

/**
 * The status page: the report rendered on the server (no build step, no front-end library),
 * refreshed in the background so a page load only renders. Actions need the admin token.
 */
export async function startStatusServer(
  config: Config,
  client: Client,
  options: { host?: string; port?: number } = {},
): Promise<StatusServer> {
  const cache: ClosedRunCache = new Map();
  const runCache: RunOutcomeCache = new Map();
  const history = new RateHistory();
  let latest: StatusReport | undefined;
  let collectError: string | null = null;
  /** Why the last refresh failed and when, while the report shown is the one before it. */
  let staleSince: { failingSince: number; reason: string; message: string } | null = null;
  let inFlight: Promise<StatusReport> | undefined;
  // Stops a report being gathered at close: its retries must not outlive the client.
  const stopping = new AbortController();

  let logger: ReturnType<typeof createLogger> | undefined;
  const logUnexpected = (error: unknown): void => {
    logger ??= createLogger({ level: config.log.level, format: config.log.format });
    logger.warn({ err: error }, 'the status page could not answer a request');
  };
  const refresh = (): Promise<StatusReport> => {
    inFlight ??= withCallDeadlines(REFRESH_CALL_DEADLINE_MS, () =>
      collectStatus(client, config, { cache, runCache, signal: stopping.signal }),
    )
      .then((report) => {
        latest = report;
        collectError = null;
        staleSince = null;
        history.add(report);
        return report;
      })
      .catch((error: unknown) => {
        const refusal = refusalOf(error, config);
        // Closing cancels the report being gathered: no failure of the page's.
        if (refusal.unexpected && !stopping.signal.aborted) logUnexpected(error);
        collectError = refusal.message;
        // The first failure of a run of them: how long the report has been stale.
        staleSince = {
          failingSince: staleSince?.failingSince ?? Date.now(),
          reason: refusal.reason,
          message: refusal.message,
        };
        if (latest) return latest;
        throw error;
      })
      .finally(() => (inFlight = undefined));
    return inFlight;
  };
  // An action's change shows only in a report begun after it: one already in flight was begun
  // before, so joining it would show the old state until the next tick's report (seconds on a
  // loaded machine). Actions that come while one waits share the next report.
  let queued: Promise<StatusReport> | undefined;
  const refreshAfterNow = (): Promise<StatusReport> => {
    if (!inFlight) return refresh();
    queued ??= inFlight
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        if (stopping.signal.aborted && latest) return latest;
        return refresh();
      });
    return queued;
  };
  /**
   * An action answers once a report shows its change (or after ACTION_SETTLE_MS, whichever is
   * first), so the page's fetch that follows the answer shows it too.
   */
  const settleAfterAction = (): Promise<void> =>
    pause(ACTION_SETTLE_MS, { signal: stopping.signal, until: [refreshAfterNow()] });
  const current = async (): Promise<StatusReport> => latest ?? (await refresh());
  const timer = setInterval(() => void refresh().catch(() => undefined), REFRESH_MS);
  timer.unref();
  // Gathering starts now, not at the first visit: the first report takes about a second.
  void refresh().catch(() => undefined);

  const host = options.host ?? config.status.host;
  const hostAllowed = hostCheck(config, host);
  const app = Fastify({
    logger: false,
    // What Node refuses before any route (headers over its size limit, bytes that are not
    // HTTP, headers not in within its 60 s headersTimeout) answers in the error shape too.
    clientErrorHandler: answerClientError({ requestTimeoutMs: 60_000 }),
    http: NODE_REFUSALS_ANSWERED,
    // The router refuses an undecodable (`%ff`) or over-long path segment before any error
    // handler runs: without this, the answer would come in Fastify's own shape.
    frameworkErrors: (_error, _request, reply) =>
      void refuse(
        reply,
        400,
        'bad_request',
        'bad_path',
        'the path is not validly percent-encoded, or a part of it is too long (100 characters at most)',
      ),
  });
  answerNodeRefusals(app);
  // Actions take no body: JSON (Fastify's other default) is read and ignored; text is refused
  // with a 415 before any action runs, as docs/status.md says.
  app.removeContentTypeParser('text/plain');
  // An empty body is no body, whatever its type says (Fastify's reader refuses it as JSON);
  // a body that is not JSON is refused by the error handler as malformed_body.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = String(body);
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text) as unknown);
    } catch {
      done(Object.assign(new SyntaxError('the body is not JSON'), { statusCode: 400 }), undefined);
    }
  });
  app.addHook('onRequest', async (request, reply) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) void reply.header(name, value);
    if (!hostAllowed(request.headers.host)) {
      return refuse(
        reply,
        403,
        'forbidden',
        'host_not_allowed',
        'this page answers only to IP addresses, localhost and the names in EBSYNC_STATUS_ALLOWED_HOSTS (a guard against DNS rebinding): add the name you reach it by there',
      );
    }
  });
  app.setErrorHandler((error, _request, reply) => {
    const refusal = refusalOf(error, config);
    if (refusal.unexpected) logUnexpected(error);
    return refuse(reply, refusal.code, refusal.status, refusal.reason, refusal.message);
  });
  app.setNotFoundHandler((_request, reply) =>
    refuse(reply, 404, 'not_found', 'no_such_page', 'no such page: try /'),
  );

  // Anyone who reaches the page reads it: what it shows has customers' data masked.
  const shown = (report: StatusReport): string =>
    reportHtml(publicReport(report), history.series(), collectError);
  app.get('/', async (_request, reply) => {
    // Before the first report, the page comes at once and fetches its report itself.
    const body = latest ? shown(latest) : loadingHtml();
    return reply.type('text/html; charset=utf-8').send(pageHtml(body));
  });
  app.get('/fragment', async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(shown(await current())),
  );
  // A monitor polls this, and sees no page: the last report after a failed refresh is a 503
  // (with the report, and when and why it failed), never a 200 that looks current.
  app.get('/status.json', async (_request, reply) => {
    void reply.header('cache-control', 'no-store');
    let report: StatusReport;
    try {
      report = await current();
    } catch (error) {
      void reply.header('retry-after', String(REFRESH_MS / 1000));
      throw error;
    }
    if (!staleSince) return reply.send(publicReport(report));
    return reply
      .code(503)
      .header('retry-after', String(REFRESH_MS / 1000))
      .send({
        ...publicReport(report),
        stale: {
          generatedAt: report.generatedAt,
          failingSince: staleSince.failingSince,
          reason: staleSince.reason,
          message: staleSince.message,
        },
      });
  });

  const adminToken = config.status.adminToken;
  const authorize = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!adminToken) {
      return refuse(
        reply,
        403,
        'forbidden',
        'actions_disabled',
        'actions are off: set EBSYNC_ADMIN_TOKEN where the status page runs',
      );
    }
    const header = request.headers.authorization ?? '';
    // The scheme is case-insensitive (RFC 9110 §11.1): `bearer` and `BEARER` are Bearer.
    const match = /^Bearer +(\S+) *$/i.exec(header);
    if (!match?.[1]) {
      return refuse(
        reply,
        401,
        'unauthorized',
        'admin_token_missing',
        'this action needs the admin token: Authorization: Bearer <EBSYNC_ADMIN_TOKEN>',
      );
    }
    if (!sameSecret(match[1], adminToken)) {
      return refuse(reply, 403, 'forbidden', 'admin_token_invalid', 'the admin token is wrong');
    }
  };

  /**
   * The connection named in the path, from the latest list (listing asks every connection's
   * workflow, which needs a worker: a fresh list only when the latest does not have it); a
   * reply when it is unknown.
   */
  const connectionOf = async (request: FastifyRequest, reply: FastifyReply) => {
    const { id } = request.params as { id: string };
    if (!isConnectionName(id)) {
      reply.code(422).send({
        meta: { status: 'error' },
        errors: { connection: [`expected ${CONNECTION_RULE_TEXT}`] },
      });
      return undefined;
    }
    const found =
      latest?.connections.find((c) => c.connectionId === id) ??
      (await notLongerThan(refresh(), 'listing the connections')).connections.find(
        (c) => c.connectionId === id,
      );
    if (!found)
      refuse(reply, 404, 'not_found', 'connection_not_found', `no connection named '${id}'`);
    return found;
  };

  app.post('/api/connections/:id/sync', { preHandler: authorize }, async (request, reply) => {
    const connection = await connectionOf(request, reply);
    if (!connection) return reply;
    // What `ebsync sync` starts, refused as it refuses: a pass of a connection that needs
    // re-authorization would fail at its first request (the page said "started" of one).
    // And into a destination another connection writes, the line `ebsync sync` says up front:
    // the page said "started", and the pass failed in the worker.
    const destination = defaultDestination(config);
    let credentialsVersion: number | undefined;
    try {
      credentialsVersion = await refuseNeedsReauth(client, config, connection.connectionId);
      await refuseOtherWriter(config, connection.connectionId, destination, 'nothing was started');
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      return refuse(reply, 409, 'conflict', 'connection_not_syncable', error.message);
    }
    const { handle, attached } = await startOrAttach(client, config, {
      subjects: [...MIRROR_SUBJECTS],
      destination,
      full: false,
      connectionId: connection.connectionId,
      ...(credentialsVersion !== undefined ? { credentialsVersion } : {}),
    });
    await settleAfterAction();
    return reply.code(attached ? 200 : 202).send({
      meta: { status: 'ok' },
      workflow_id: handle.workflowId,
      attached,
      message: attached
        ? `a mirror of ${connection.connectionId} is already running (${handle.workflowId})`
        : `started the mirror of ${connection.connectionId} (${handle.workflowId})`,
    });
  });

  for (const action of ['pause', 'resume'] as const) {
    app.post(
      `/api/connections/:id/${action}`,
      { preHandler: authorize },
      async (request, reply) => {
        const connection = await connectionOf(request, reply);
        if (!connection) return reply;
        const handle = client.workflow.getHandle(connectionWorkflowId(connection.connectionId));
        // Without a worker an update waits (about ten minutes, then fails): say so at once
        // when none polls, and within the deadline when the last one has just gone.
        await requireWorkerOf(client, config, handle.workflowId);
        const what = `${action} of ${connection.connectionId}`;
        // A worker answers first, as 'ebsync connections pause' asks: "try again" must mean
        // nothing was sent, since Temporal keeps an update no worker takes and delivers it later.
        let status: ConnectionStatus;
        // The state before, as 'ebsync connections pause|resume' says it: 'resumed' of a
        // connection that was never paused tells its user something happened.
        let before: ConnectionStatus['state'] | undefined;
        try {
          status = await updateOnceAnswered(
            client,
            handle.workflowId,
            ACTION_DEADLINE_MS,
            (answered) => {
              before = answered.state;
              return handle.executeUpdate(setPausedUpdate, { args: [action === 'pause'] });
            },
            {
              unanswered: () => noAnswer(what, ', and nothing was sent to it'),
              kept: () =>
                new UpdateKeptError(
                  `${what}: no worker carried it out within ${ACTION_DEADLINE_MS / 1000} s; ${REQUEST_KEPT}`,
                ),
            },
          );
        } catch (error) {
          if (!(error instanceof UpdateKeptError)) throw error;
          return reply
            .code(202)
            .send({ meta: { status: 'accepted' }, state: 'requested', message: error.message });
        }
        const wanted = action === 'pause' ? 'paused' : 'active';
        await settleAfterAction();
        if (status.state !== wanted) {
          return refuse(
            reply,
            409,
            'conflict',
            'connection_not_active',
            `connection '${connection.connectionId}' is ${status.state}; ${action} applies to active or paused connections only`,
          );
        }
        const id = connection.connectionId;
        let message = `${action === 'pause' ? 'paused' : 'resumed'}: ${id}`;
        if (before === wanted) {
          message =
            action === 'pause'
              ? `already paused: ${id}`
              : `not paused: ${id}; nothing to resume, its syncs run`;
        }
        return reply.send({ meta: { status: 'ok' }, state: status.state, message });
      },
    );
  }

  const scheduleActions = {
    pause: (handle, d) => pauseSchedule(handle, d, undefined, 'paused from the status page'),
    resume: (handle, d) => resumeSchedule(handle, d, 'resumed from the status page'),
    trigger: triggerSchedule,
  } satisfies Record<string, (...args: Parameters<typeof triggerSchedule>) => Promise<string>>;
  for (const [action, act] of Object.entries(scheduleActions)) {
    app.post(`/api/schedules/:id/${action}`, { preHandler: authorize }, async (request, reply) => {
      const { id } = request.params as { id: string };
      // The CLI's rule: an id it refuses as malformed was a 404 here, said as not found.
      if (!isScheduleId(id)) {
        return reply.code(422).send({
          meta: { status: 'error' },
          errors: { schedule: [`expected an id of ebsync's schedules: ${SCHEDULE_ID_RULE}`] },
        });
      }
      const handle = client.schedule.getHandle(id);
      let description;
      try {
        description = await handle.describe();
      } catch (error) {
        if (!(error instanceof ScheduleNotFoundError)) throw error;
        return refuse(reply, 404, 'not_found', 'schedule_not_found', `no schedule named '${id}'`);
      }
      let message;
      try {
        message = await act(handle, description);
      } catch (error) {
        // Nothing changed: its spec, not the request, is what cannot be done.
        if (!(error instanceof ScheduleNeverFiresError)) throw error;
        return refuse(reply, 409, 'conflict', 'schedule_never_fires', error.message);
      }
      await settleAfterAction();
      return reply.send({ meta: { status: 'ok' }, schedule_id: id, message });
    });
  }

  try {
    await app.listen({ host, port: options.port ?? config.status.port });
  } catch (error) {
    // The report gathered since the start must not outlive the page: its retries would call
    // a client the caller closes next (the dev stack does, then tries a free port).
    clearInterval(timer);
    stopping.abort();
    await inFlight?.catch(() => undefined);
    throw (
      listenRefusal(error, {
        host,
        port: options.port ?? config.status.port,
        hostFrom: 'EBSYNC_STATUS_HOST',
        portFrom: 'EBSYNC_STATUS_PORT',
      }) ?? error
    );
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.status.port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}/`,
    close: async () => {
      clearInterval(timer);
      await app.close();
      stopping.abort();
      await Promise.all([inFlight?.catch(() => undefined), queued?.catch(() => undefined)]);
    },
  };
}

/** One line saying where the page is, and whether its actions are on. */
export function statusPageBanner(config: Config, url: string): string {
  const actions = config.status.adminToken
    ? 'actions need the admin token'
    : 'read-only: set EBSYNC_ADMIN_TOKEN to enable actions';
  const exposed = isLoopbackHost(config.status.host) ? '' : ' (reachable from the network)';
  return `Status page: ${url}${exposed} (${actions})\n`;
}

/** gRPC's UNAVAILABLE: no connection to Temporal (yet). */
const GRPC_UNAVAILABLE = 14;

/**
 * For a page started while Temporal was away: once Temporal answers, its namespace is checked
 * as connectClient checks it at start, so that a TEMPORAL_NAMESPACE that does not exist, or a
 * server that is no Temporal frontend, ends the command in one line instead of leaving a page
 * that never fills. Resolves once Temporal answered otherwise, or `signal` aborts.
 */
async function checkedOnceAnswered(
  client: Client,
  config: Config,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    let away = false;
    await requireNamespace(async () => {
      try {
        await client.connection.withAbortSignal(signal, () =>
          client.connection.withDeadline(Date.now() + 5_000, () =>
            client.connection.workflowService.describeNamespace({
              namespace: config.temporal.namespace,
            }),
          ),
        );
      } catch (error) {
        const code = isGrpcServiceError(error) ? Number(error.code) : undefined;
        away = code === GRPC_UNAVAILABLE || code === GRPC_DEADLINE_EXCEEDED;
        throw error;
      }
    }, config);
    if (!away) return;
    await pause(2_000, { signal });
  }
}

/** The page with a Temporal client of its own; close() ends both. */
export async function openStatusPage(
  config: Config,
  options: { port?: number; whenAway?: 'refuse' | 'wait' } = {},
): Promise<StatusServer & { away?: { line: string; checked: Promise<void> } }> {
  let awayLine: string | undefined;
  const { client, close } = await connectClient(config).catch((error: unknown) => {
    // Only when nothing answered: a key refused or a server that is no Temporal frontend
    // will not change by waiting, and is said at once.
    const wait =
      options.whenAway === 'wait' && error instanceof TemporalUnreachableError && error.transient;
    if (!wait) throw error;
    // Its channel connects once Temporal answers; until then each report fails as
    // unreachable, which the page shows.
    awayLine = error.message;
    return lazyClient(config);
  });
  const stopping = new AbortController();
  const checked =
    awayLine === undefined ? undefined : checkedOnceAnswered(client, config, stopping.signal);
  checked?.catch(() => undefined);
  try {
    const server = await startStatusServer(
      config,
      client,
      options.port !== undefined ? { port: options.port } : {},
    );
    return {
      ...(awayLine !== undefined && checked ? { away: { line: awayLine, checked } } : {}),
      url: server.url,
      close: async () => {
        stopping.abort();
        await checked?.catch(() => undefined);
        await server.close();
        await close();
      },
    };
  } catch (error) {
    stopping.abort();
    await checked?.catch(() => undefined);
    await close();
    throw error;
  }
}

/** `ebsync status --serve`: the page until Ctrl-C. */
export async function serveUntilSignal(config: Config): Promise<void> {
  // A page that watches the system is most wanted when part of it is down: with Temporal
  // away it starts anyway, says so (as /status.json does, 503 temporal_unavailable) and shows
  // the status once Temporal answers.
  const server = await openStatusPage(config, { whenAway: 'wait' });
  const stopped = stopSignal();
  if (server.away !== undefined) {
    process.stderr.write(
      `ebsync: ${server.away.line}. The page is up meanwhile: it says Temporal could not be reached, and shows the status once Temporal answers\n`,
    );
  }
  process.stdout.write(statusPageBanner(config, server.url));
  try {
    // A namespace found missing once Temporal answers ends it as at start (one line, exit 2).
    await Promise.race([stopped, server.away ? server.away.checked.then(() => stopped) : stopped]);
  } finally {
    await server.close();
  }
}
