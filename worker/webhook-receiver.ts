import { join } from 'node:path';
import { ConfigError, type Config } from '../config/index.js';
import { storeLocation } from '../config/database-locations.js';
import { openInbox } from '../store/open-inbox.js';
import type { WebhookRegistrations } from '../store/webhook-registrations.js';
import { createReceiver, type ServerLimits } from '../webhooks/receiver.js';
import { signingSecretProblem } from '../webhooks/signature.js';
import { ReceiverStatsRecorder } from '../webhooks/receiver-stats.js';
import { WakeUps } from '../webhooks/wake-ups.js';
import { SpooledStore } from '../webhooks/spooled-store.js';
import { WebhookSpool } from '../store/webhook-spool.js';
import { webhookRegistrations } from './webhook-registrations-file.js';
import { drainWaker } from './drain-wake.js';
import type { Logger } from './logger.js';
import { receiverOrigin, recordReceiverAddress } from './receiver-address.js';
import { receiverStatsToken } from './receiver-stats-token.js';
import { openOnce } from './open-once.js';
import { storeRefusal } from './store-refusal.js';
import { storeLocationOf } from '../store/open-ledger.js';
import { lazyClient } from './temporal-client.js';

export { webhookRegistrations };

/**
 * The receiver's spool (webhooks/spooled-store.ts): notices the store could not take yet, in
 * the data dir beside the registrations, so a restart forwards what an outage left.
 */
export function webhookSpoolFile(config: Config): string {
  return join(config.dataDir, 'webhook-spool.db');
}

/**
 * Every registration's secret must sign under the configured scheme: one that cannot would
 * be a 503 to each of its deliveries, retried by the sender forever. Refused at the start
 * instead, naming the connection and what to do.
 */
async function checkSecrets(config: Config, registrations: WebhookRegistrations): Promise<void> {
  const scheme = config.webhooks.signature;
  for (const connectionId of registrations.connectionIds()) {
    const registration = await registrations.get(connectionId);
    const problem = registration && signingSecretProblem(scheme, registration.secret);
    if (problem) {
      throw new ConfigError([
        `the webhook registration of connection '${connectionId}' has a signing secret EBSYNC_WEBHOOK_SIGNATURE=${scheme === 'standard' ? 'standard' : 'the HMAC scheme'} cannot use (${problem}): run 'ebsync webhooks register ${connectionId}' again with a valid one`,
      ]);
    }
  }
}

/** The receiver's timeouts and connection cap, from EBSYNC_WEBHOOK_* settings. */
export function receiverLimits(config: Config): ServerLimits {
  const w = config.webhooks;
  return {
    requestTimeoutMs: w.requestTimeout,
    headersTimeoutMs: w.headersTimeout,
    keepAliveTimeoutMs: w.keepAliveTimeout,
    connectionTimeoutMs: w.connectionTimeout,
    maxConnections: w.maxConnections,
  };
}

/** A registration read this recently is used as read: at most this late after a change. */
const REGISTRATION_TTL_MS = 5_000;

/**
 * Registrations as read in the last few seconds: each read is an SQLite lookup and an AES-GCM
 * open, which at hundreds of deliveries a second would cost more than the rest of a delivery.
 * A change (`ebsync webhooks register`) takes effect within REGISTRATION_TTL_MS.
 */
function recentlyRead<T>(
  read: (connectionId: string) => Promise<T>,
): (connectionId: string) => Promise<T> {
  const kept = new Map<string, { value: Promise<T>; at: number }>();
  return (connectionId) => {
    const now = Date.now();
    const hit = kept.get(connectionId);
    if (hit && now - hit.at < REGISTRATION_TTL_MS) return hit.value;
    if (kept.size > 1_000) kept.clear();
    const value = read(connectionId);
    kept.set(connectionId, { value, at: now });
    value.catch(() => kept.delete(connectionId));
    return value;
  };
}

export interface RunningReceiver {
  /** `http://host:port`; deliveries go to `<url>/webhooks/<connection>`. */
  url: string;
  close(): Promise<void>;
}

/**
 * The receiver wired to this deployment: registrations from the data dir, notices into the
 * store's inbox (EBSYNC_STORE_URL), and the connection's drain woken on TEMPORAL_TASK_QUEUE.
 * It starts whether or not the store and Temporal are up: without the store it keeps notices
 * in its spool and forwards them once the store is back; without Temporal it still stores
 * notices, and their drains are woken once it is back.
 */
export async function startWebhookReceiver(
  config: Config,
  logger: Logger,
  listen: { host?: string; port?: number } = {},
): Promise<RunningReceiver> {
  const registrations = webhookRegistrations(config);
  try {
    await checkSecrets(config, registrations);
  } catch (error) {
    registrations.close();
    throw error;
  }
  const temporal = lazyClient(config);
  const inbox = openOnce(() => openInbox(storeLocation(config)));
  const log = logger.child({ component: 'webhooks' });
  const wakeUps = new WakeUps(
    drainWaker(temporal.client, config.temporal.taskQueue, async (connectionId) =>
      (await inbox.get()).watching(connectionId),
    ),
    (connectionId, error) =>
      log.warn(
        { connectionId, error: error instanceof Error ? error.message : String(error) },
        'the drain could not be woken; trying again (the notices are stored)',
      ),
  );
  const spoolFile = webhookSpoolFile(config);
  let spool: WebhookSpool;
  try {
    spool = WebhookSpool.open(spoolFile);
  } catch (error) {
    registrations.close();
    throw new ConfigError([
      `the webhook receiver cannot open its spool ${spoolFile}: ${error instanceof Error ? error.message : String(error)} (it lives in EBSYNC_DATA_DIR, which must be writable)`,
    ]);
  }
  const wakeForwarded = (connectionIds: readonly string[]): void => {
    for (const connectionId of connectionIds) {
      registrations
        .get(connectionId)
        .then((hook) => hook && wakeUps.wake(connectionId, hook.destination))
        .catch((error: unknown) =>
          log.warn(
            { connectionId, error: error instanceof Error ? error.message : String(error) },
            'could not read the registration to wake the drain; it checks its inbox on its own',
          ),
        );
    }
  };
  const spooled = new SpooledStore({
    inbox: () => inbox.get(),
    spool,
    spoolFile,
    // Half of the receiver's own wait for the store: the spool's commit fits in the rest.
    inboxWaitMs: Math.floor(config.webhooks.requestTimeout / 4),
    forwarded: wakeForwarded,
    log: (level, fields, message) => log[level](fields, message),
  });
  const app = createReceiver({
    hookOf: recentlyRead((connectionId) => registrations.get(connectionId)),
    store: (notice) => spooled.take(notice),
    stored: (connectionId, hook) => wakeUps.wake(connectionId, hook.destination),
    scheme: config.webhooks.signature,
    bodyLimit: config.webhooks.bodyLimit,
    allowUnsigned: config.webhooks.allowUnsigned,
    limits: receiverLimits(config),
    log: (level, fields, message) => log[level](fields, message),
    stats: new ReceiverStatsRecorder(() => spooled.state()),
    statsToken: receiverStatsToken(config),
  });
  const close = async (): Promise<void> => {
    wakeUps.close();
    await app.close();
    await spooled.close();
    spool.close();
    registrations.close();
    await inbox.close();
    await temporal.close();
  };
  const host = listen.host ?? config.webhooks.host;
  try {
    // An SQLite store opens at once or never (a folder named as its file, no permission to
    // make it): a setting to fix, said at start rather than as a 503 to every delivery. A
    // Postgres store may be restarting; without it deliveries get 503 until it is back.
    if (storeLocationOf(storeLocation(config)).kind === 'sqlite') {
      await inbox.get().catch((error: unknown) => {
        throw storeRefusal(config, error);
      });
    }
    await app.listen({ host, port: listen.port ?? config.webhooks.port });
  } catch (error) {
    await close();
    throw error;
  }
  // Notices a crash left without their wake-up: their drains are woken now.
  void (async () => {
    for (const connectionId of await (await inbox.get()).pendingConnections()) {
      const hook = await registrations.get(connectionId);
      if (hook) wakeUps.wake(connectionId, hook.destination);
    }
  })().catch((error: unknown) =>
    log.warn(
      { error: error instanceof Error ? error.message : String(error) },
      'could not look for notices left pending; their drains check on their own',
    ),
  );
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = receiverOrigin({ host, port });
  if (config.webhooks.allowUnsigned) {
    // Allowed in development only (config/schema.ts), and said at every start: anyone who can
    // reach the port can then make the drains read any record of a registered connection.
    log.warn(
      'EBSYNC_WEBHOOK_ALLOW_UNSIGNED=true (or webhooks.allowUnsigned in the config file): deliveries without a signature are accepted for registered connections (development only)',
    );
  }
  const forget = recordReceiverAddress(config, { host, port }, (error) =>
    log.warn(
      { error: error instanceof Error ? error.message : String(error) },
      'could not record where the receiver listens; ebsync status looks for it at EBSYNC_WEBHOOK_HOST:EBSYNC_WEBHOOK_PORT only',
    ),
  );
  return {
    url,
    close: async () => {
      forget();
      await close();
    },
  };
}
