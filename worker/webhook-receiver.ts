import { join } from 'node:path';
import { ConfigError, type Config } from '../config/index.js';
import {
  sqliteWebhookRegistrations,
  type WebhookRegistrations,
} from '../store/webhook-registrations.js';
import { createReceiver } from '../webhooks/receiver.js';
import { signingSecretProblem } from '../webhooks/signature.js';
import { ReceiverStatsRecorder } from '../webhooks/receiver-stats.js';
import { dataConverter } from './data-converter.js';
import type { Logger } from './logger.js';
import { receiverStatsToken } from './receiver-stats-token.js';
import { recordHandOff } from './record-hand-off.js';
import { lazyClient } from './temporal-client.js';

/** Where registrations live: the data dir of the machine that runs the receiver. */
export function webhookRegistrations(config: Config): WebhookRegistrations {
  const codec = dataConverter(config).payloadCodecs?.[0];
  if (!codec) throw new Error('the data converter has no payload codec');
  return sqliteWebhookRegistrations(join(config.dataDir, 'webhooks.db'), codec);
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

export interface RunningReceiver {
  /** `http://host:port`; deliveries go to `<url>/webhooks/<connection>`. */
  url: string;
  close(): Promise<void>;
}

/**
 * The receiver wired to this deployment: registrations from the data dir, hand-off by
 * signal-with-start on TEMPORAL_TASK_QUEUE. It starts whether or not Temporal is up.
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
  const log = logger.child({ component: 'webhooks' });
  const app = createReceiver({
    hookOf: (connectionId) => registrations.get(connectionId),
    handOff: recordHandOff(temporal.client, {
      taskQueue: config.temporal.taskQueue,
      debounceMs: config.webhooks.debounce,
    }),
    scheme: config.webhooks.signature,
    bodyLimit: config.webhooks.bodyLimit,
    allowUnsigned: config.webhooks.allowUnsigned,
    log: (level, fields, message) => log[level](fields, message),
    stats: new ReceiverStatsRecorder(),
    statsToken: receiverStatsToken(config),
  });
  const host = listen.host ?? config.webhooks.host;
  try {
    await app.listen({ host, port: listen.port ?? config.webhooks.port });
  } catch (error) {
    registrations.close();
    await temporal.close();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    async close() {
      await app.close();
      registrations.close();
      await temporal.close();
    },
  };
}
