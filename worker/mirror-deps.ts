import { storeLocation } from '../config/database-locations.js';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Client as ServiceClient } from '../api/client.js';
import type { DrainDeps } from '../activities/mirror/drain-inbox.js';
import { pacedClients, pacedPages } from '../activities/request-pacing.js';
import { rateLimitReporter } from './rate-limits.js';
import { clientForConnection } from '../activities/service-client.js';
import { connectionFailure, type ConnectionTokens } from '../activities/connection-tokens.js';
import type { Config } from '../config/index.js';
import type { Destination } from '../destinations/destination.js';
import { openDestination, type DestinationKeeping } from '../destinations/open-destination.js';
import { databaseOpeners } from '../store/database-openers.js';
import type { Ledger } from '../store/ledger.js';
import { openInbox } from '../store/open-inbox.js';
import { openLedger } from '../store/open-ledger.js';
import { openOnce } from './open-once.js';
import { connectionWorkflowId, statusQuery } from '../workflows/connection-types.js';

/** A service client is rebuilt this often, so a reconnect's new key or base URL is picked up. */
const CLIENT_TTL_MS = 60_000;
/** An activity's client is checked against its connection's workflow when older than this. */
const RECHECK_MS = 1_000;

/**
 * What the mirror's and the drains' activities need, per worker process: one ledger and one
 * inbox (the store's), each destination opened once, and a service client per connection
 * whose credentials come from its workflow.
 */
export function createMirrorDeps(
  config: Config,
  temporal: TemporalClient,
  tokens: ConnectionTokens,
  ca: Buffer | undefined,
  keeping: DestinationKeeping = {},
  onSignalError: (error: unknown) => void = () => undefined,
  /** How often an activity's credentials are checked against the workflow (tests: longer). */
  recheckMs = RECHECK_MS,
): DrainDeps & { close(): Promise<void> } {
  const ledger = openOnce(() => openLedger(storeLocation(config)));
  const inbox = openOnce(() => openInbox(storeLocation(config)));
  const destinations = new Map<string, Promise<Destination>>();
  const openLedgerOnce = (): Promise<Ledger> => ledger.get();

  const { rateLimit } = config.service;
  const onRefused = rateLimitReporter(temporal, onSignalError, { unlimited: rateLimit === 0 });
  const newClient = async (connectionId: string): Promise<ServiceClient> => {
    // A connection that does not exist (a mirror started for a mistyped or removed one) fails
    // the activity for good, rather than retrying a query nothing can answer.
    const status = await temporal.workflow
      .getHandle(connectionWorkflowId(connectionId))
      .query(statusQuery)
      .catch(async (error: unknown) => {
        throw await connectionFailure(temporal, connectionId, error);
      });
    return clientForConnection(tokens, connectionId, status.baseUrl, {
      ...(ca ? { ca } : {}),
      ...(config.service.allowHttp ? { allowInsecureLoopback: true } : {}),
      ...(config.service.routeOverrides ? { routeOverrides: config.service.routeOverrides } : {}),
    });
  };
  // The credentials version each connection's client was made with: one made before a
  // reconnect is made again (activities/service-client.ts stops it sending meanwhile).
  const builtWith = new Map<string, number | undefined>();
  const pacedFor = pacedClients(
    async (connectionId: string) => {
      const made = await newClient(connectionId);
      builtWith.set(connectionId, tokens.versionOf(connectionId));
      return made;
    },
    { ratePerSecond: rateLimit, ledger: openLedgerOnce, onRefused },
    CLIENT_TTL_MS,
  );
  const clientFor = async (
    connectionId: string,
    credentialsVersion?: number,
  ): Promise<ServiceClient> => {
    // Once per activity, and a query at most once a second per connection, or at once when
    // the pass was asked for under newer credentials than this process holds: a sync started
    // right after `ebsync connect` uses what it saved.
    await tokens.current(connectionId, recheckMs, credentialsVersion);
    const client = await pacedFor(connectionId);
    if (builtWith.get(connectionId) === tokens.versionOf(connectionId)) return client;
    pacedFor.forget(connectionId);
    return pacedFor(connectionId);
  };

  const credentialsReplaced = async (connectionId: string): Promise<boolean> => {
    await tokens.current(connectionId, 0);
    return builtWith.get(connectionId) !== tokens.versionOf(connectionId);
  };

  return {
    reachLimit: config.service.reachLimit,
    minYield: config.mirror.minYield,
    per: config.service.pageSize,
    // Under a rate limit every request waits for its slot in the shared store
    // (docs/rate-limits.md), and activities read enough pages to keep the slots busy.
    ...(rateLimit > 0 ? pacedPages(rateLimit) : {}),
    clientFor,
    credentialsReplaced,
    ledger: openLedgerOnce,
    inbox: () => inbox.get(),
    batchSize: config.webhooks.batch,
    dedupeWindowMs: config.webhooks.dedupeWindow,
    // A quarter of the worker's activity slots at most go to drain sessions.
    session: {
      maxMs: config.webhooks.session,
      slots: Math.max(1, Math.floor(config.worker.maxConcurrentActivities / 4)),
    },
    destination(target) {
      let opened = destinations.get(target);
      if (!opened) {
        opened = Promise.resolve().then(() =>
          openDestination(databaseOpeners, target, config.crm, keeping),
        );
        destinations.set(target, opened);
        opened.catch(() => destinations.delete(target));
      }
      return opened;
    },
    async close() {
      const open = [...destinations.values()];
      destinations.clear();
      await Promise.allSettled([
        ...open.map(async (p) => (await p).close()),
        ledger.close(),
        inbox.close(),
      ]);
    },
  };
}
