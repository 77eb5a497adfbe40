import { join } from 'node:path';
import type { PayloadCodec } from '@temporalio/common';
import type { Config } from '../config/index.js';
import { sealedTokenTable } from './sealed-token-table.js';

/**
 * Refresh tokens a CRM rotated. When its token answer carries a new refresh token, the one in
 * the settings may stop working, so the new one is kept (sealed with the payload codec, as
 * every secret ebsync keeps on disk) and used from then on. Entries are keyed by the account
 * and by a hash of the configured token: a new token put in the settings wins over a rotation
 * of the old one.
 */
export interface RefreshTokenStore {
  /** The token to present in place of `configured`, when it was rotated. */
  latest(account: string, configured: string): Promise<string | undefined>;
  /** Keeps `next` as the token to present in place of `configured`. */
  keep(account: string, configured: string, next: string): Promise<void>;
  close(): void;
}

export function sqliteRefreshTokenStore(file: string, codec: PayloadCodec): RefreshTokenStore {
  // Durable: the old token may be dead the moment the new one is handed over.
  const tokens = sealedTokenTable(file, codec, {
    table: 'crm_refresh_tokens',
    owner: 'account',
    tokenHash: 'configured_hash',
    at: 'updated_at',
  });
  return {
    latest: (account, configured) => tokens.get<string>(account, configured),
    keep: (account, configured, next) => tokens.put(account, configured, next),
    close: () => tokens.close(),
  };
}

/** The data dir's `crm-refresh-tokens.db`, shared by the workers and `ebsync destinations setup`. */
export function crmRefreshTokens(
  config: Pick<Config, 'dataDir'>,
  codec: PayloadCodec,
): RefreshTokenStore {
  return sqliteRefreshTokenStore(join(config.dataDir, 'crm-refresh-tokens.db'), codec);
}
