import type { Config } from '../config/index.js';
import { storeLocation } from '../config/database-locations.js';
import {
  ledgerDestinationId,
  parseDestinationTarget,
  targetOfLedgerId,
} from '../destinations/destination-targets.js';
import { DestinationClaimedError, StoreError } from '../store/errors.js';
import type { Ledger } from '../store/ledger.js';
import { UserError } from './errors.js';

/*
 * The ledger's side of a destination, as the commands see it: which connection writes it
 * (Ledger.claimDestination, docs/mirror.md "One connection per destination").
 */

/** The ledger's key of a destination target, a CRM's from this command's settings. */
export function ledgerIdOf(config: Config, destination: string): string {
  return ledgerDestinationId(destination, {
    hubspot: config.crm.hubspot.baseUrl,
    pipedrive: config.crm.pipedrive.baseUrl,
    salesforce: config.crm.salesforce.baseUrl,
  });
}

/** Runs `fn` on the ledger the workers share, opened from this command's settings. */
export async function withLedger<T>(
  config: Config,
  fn: (ledger: Ledger) => Promise<T>,
): Promise<T> {
  // Loaded here: the database drivers are not for commands that never open the store (the
  // sync command loads this file, and opens the store only when it starts a pass).
  const { openLedger } = await import('../store/open-ledger.js');
  const ledger = await openLedger(storeLocation(config));
  try {
    return await fn(ledger);
  } finally {
    await ledger.close();
  }
}

/**
 * The connections other than `connectionId` the ledger has writing `destination`. A store this
 * machine cannot open (a StoreError) counts as none: that is left to the workers, whose every
 * pass and batch checks the same before writing.
 */
export async function otherWriters(
  config: Config,
  connectionId: string,
  destination: string,
): Promise<string[]> {
  let writers: string[];
  try {
    writers = await withLedger(config, (ledger) =>
      ledger.destinationWriters(ledgerIdOf(config, destination)),
    );
  } catch (error) {
    // The store's own failures (unreachable from here, locked, newer than this command) are
    // the workers' to meet; anything else is a fault of this command and is not hidden.
    if (error instanceof StoreError) return [];
    throw error;
  }
  return writers.filter((w) => w !== connectionId);
}

/**
 * Before a command starts a pass, a schedule or a webhook registration into a destination
 * another connection writes: the one line the pass would fail with, saying `refused` (what the
 * command did not do) where the pass says nothing was written, exit 1.
 */
export async function refuseOtherWriter(
  config: Config,
  connectionId: string,
  destination: string,
  refused: string,
): Promise<void> {
  const others = await otherWriters(config, connectionId, destination);
  if (others.length === 0) return;
  const { kind } = parseDestinationTarget(destination);
  const target = targetOfLedgerId(kind, ledgerIdOf(config, destination));
  throw new UserError(new DestinationClaimedError(target, connectionId, others, refused).message);
}
