import type { Destination } from '../../destinations/destination.js';
import { targetOfLedgerId } from '../../destinations/destination-targets.js';
import { DestinationClaimedError } from '../../store/errors.js';
import type { Ledger } from '../../store/ledger.js';

/**
 * Makes sure a connection is the one writer of a destination before anything is written there
 * (Ledger.claimDestination): every pass begins with it, and every webhook batch, so a schedule
 * or a drain can no more mix two businesses' records than `ebsync sync` can.
 * DestinationClaimedError (not retryable) names the other connection and the way out.
 */
export async function claimSoleWriter(
  ledger: Ledger,
  destination: Destination,
  connectionId: string,
): Promise<void> {
  const { kind, id } = destination.describe();
  const others = await ledger.claimDestination(id, connectionId);
  if (others.length === 0) return;
  throw new DestinationClaimedError(targetOfLedgerId(kind, id), connectionId, others);
}
