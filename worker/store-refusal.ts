import { ConfigError } from '../config/index.js';
import { maskCredentials, storeLocation } from '../config/database-locations.js';
import type { Config } from '../config/index.js';

/**
 * The one line for a store that did not open at start (the worker's ledger, the receiver's
 * inbox): which setting names it, and why, without its password.
 */
export function storeRefusal(
  config: Pick<Config, 'store' | 'dataDir'>,
  error: unknown,
): ConfigError {
  const where = config.store.url
    ? `EBSYNC_STORE_URL ${maskCredentials(config.store.url)}`
    : `the store ${storeLocation(config)} (EBSYNC_DATA_DIR)`;
  const why = error instanceof Error ? error.message.split('\n')[0] : String(error);
  return new ConfigError([`${where} cannot be opened: ${maskCredentials(why ?? '')}`]);
}
