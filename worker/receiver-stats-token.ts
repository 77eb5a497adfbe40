import { hkdfSync } from 'node:crypto';
import type { Config } from '../config/index.js';
import { encryptionKeys } from './data-converter.js';

/**
 * The token `GET /webhooks/_stats` asks for. A check of the caller's address alone made the
 * counters public behind a reverse proxy on the same host (every request then comes from
 * loopback), and a header a proxy adds can be left out by another. The token is derived from
 * the current key of EBSYNC_ENCRYPTION_KEYS (HKDF-SHA256, its own label): the receiver and
 * whoever reads the counters (the status page, `ebsync status`) share the keys already, so
 * there is nothing to set, and nobody without the keys can have it.
 */
export function receiverStatsToken(config: Config): string {
  const [current] = encryptionKeys(config);
  if (!current) throw new Error('no encryption key to derive the receiver stats token from');
  const bytes = hkdfSync('sha256', current.key, Buffer.alloc(0), 'ebsync/receiver-stats/v1', 32);
  return Buffer.from(bytes).toString('base64url');
}
