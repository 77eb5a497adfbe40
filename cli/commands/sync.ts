import type { Command } from 'commander';
import { connectionFlag, intFlag } from '../options.js';
import type { SyncFlags } from '../sync.js';

/**
 * What `--to` takes, said alike by every command that mirrors into a destination (sync,
 * schedule create): they read it with the same normalizeDestination.
 */
export const DESTINATION_HELP =
  'sqlite:PATH, postgres://…, hubspot, pipedrive or salesforce (default: sqlite:<EBSYNC_DATA_DIR>/mirror.db)';

/** `ebsync sync`: its words and help; the work is in ../sync.ts. */
export function registerSyncCommand(program: Command): void {
  program
    .command('sync')
    .description(
      'Mirror leads, events and appointments into a database or a CRM (HubSpot, Pipedrive, Salesforce): starts the mirror of a connection, ' +
        'or attaches to the one already running, and shows its progress.\n' +
        'Ctrl-C detaches (the sync goes on); --cancel stops it; --status shows it without attaching.',
    )
    .argument('[what]', 'leads, events, appointments or all', 'all')
    .option('--to <destination>', DESTINATION_HELP)
    .option(
      '--full',
      'full pass: re-read every record and mark deleted ones (default: incremental)',
    )
    .option(
      '--rewrite',
      'write every record the pass reads again, whatever the ledger says is up to date (after rows were changed or removed in the destination by hand)',
    )
    .option('--connection <id>', 'connection to mirror (default: the only one)', connectionFlag())
    .option('--concurrency <n>', 'partitions read at once (1-16)', intFlag(1, 16))
    .option('--status', 'print the progress of this mirror and exit')
    .option('--cancel', 'cancel this mirror (an interrupted pass deletes nothing)')
    .option(
      '--forget',
      "delete this mirror's ended passes from Temporal, so that ebsync status no longer shows it (a mirror into a mistyped destination); what it wrote stays",
    )
    .option('--json', 'with --status or at the end: the progress as JSON')
    .option(
      '--no-check-destination',
      'start without opening the database from this machine first (for one only the workers reach)',
    )
    .action(async (what: string, flags: SyncFlags) =>
      (await import('../sync.js')).syncCommand(what, flags),
    );
}
