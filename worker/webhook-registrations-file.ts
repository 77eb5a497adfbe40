import { join } from 'node:path';
import type { Config } from '../config/index.js';
import {
  sqliteWebhookRegistrations,
  type WebhookRegistrations,
} from '../store/webhook-registrations.js';
import { dataConverter } from './data-converter.js';

/** The file of this machine's webhook registrations, in its data dir. */
export function webhookRegistrationsFile(config: Config): string {
  return join(config.dataDir, 'webhooks.db');
}

/** Where registrations live: the data dir of the machine that runs the receiver. */
export function webhookRegistrations(config: Config): WebhookRegistrations {
  const codec = dataConverter(config).payloadCodecs?.[0];
  if (!codec) throw new Error('the data converter has no payload codec');
  return sqliteWebhookRegistrations(webhookRegistrationsFile(config), codec);
}
