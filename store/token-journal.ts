import type { PayloadCodec } from '@temporalio/common';
import { sealedTokenTable } from './sealed-token-table.js';

/**
 * Where a refresh activity writes the rotated tokens the moment the OAuth server hands them
 * over, before it returns. If the worker dies between that and reporting the result, the retry
 * finds them here instead of presenting the (now dead) old refresh token again, which would
 * revoke the whole grant. Entries are sealed with the payload codec and keyed by a hash of
 * the refresh token they replaced.
 */
export interface TokenJournal {
  recall<T>(connectionId: string, replacedRefreshToken: string): Promise<T | undefined>;
  record(connectionId: string, replacedRefreshToken: string, value: unknown): Promise<void>;
  close(): void;
}

export function sqliteTokenJournal(file: string, codec: PayloadCodec): TokenJournal {
  // Durable: the write is on disk before the activity goes on; that is the point of the journal.
  const rotations = sealedTokenTable(file, codec, {
    table: 'token_rotations',
    owner: 'connection_id',
    tokenHash: 'replaced_hash',
    at: 'recorded_at',
  });
  return {
    recall: (connectionId, replaced) => rotations.get(connectionId, replaced),
    async record(connectionId: string, replaced: string, value: unknown): Promise<void> {
      await rotations.put(connectionId, replaced, value);
      // Rotations older than a week can no longer be asked for by any retry.
      rotations.dropBefore(Date.now() - 7 * 24 * 3600 * 1000);
    },
    close: () => rotations.close(),
  };
}
