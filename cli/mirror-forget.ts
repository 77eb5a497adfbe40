import { existsSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { maskCredentials } from '../config/database-locations.js';
import { destinationIdentity } from '../destinations/destination-targets.js';
import { ledgerIdOf, withLedger } from './destination-writer.js';
import { counted } from './counted.js';
import { UserError } from './errors.js';
import { describeWorkflow } from './workflow-describe.js';
import { listMirrorSchedules } from './schedule-views.js';

/** How long the command waits to see the runs gone before it says they go in the background. */
const SETTLE_MS = 3_000;

export interface ForgetTarget {
  connectionId: string;
  /** As given with --to (its password masked when said). */
  destination: string;
  /** The mirror's workflow id (mirrorWorkflowId). */
  workflowId: string;
}

/** Run ids of the mirror's workflow that Temporal's visibility lists (it may lag behind). */
async function listedRuns(client: Client, workflowId: string): Promise<string[]> {
  const runs: string[] = [];
  // The id is `mirror-<connection name>-<hex>`: no quote can be in it (isConnectionName).
  for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    runs.push(run.runId);
  }
  return runs;
}

/**
 * `ebsync sync --forget`: deletes from Temporal every ended pass of one mirror (a connection
 * into a destination), so that `ebsync status` stops reporting one no longer wanted (a failed
 * pass into a mistyped destination stays a problem until a pass into it completes), and
 * forgets what the ledger holds of it there, which frees the destination for another
 * connection (Ledger.claimDestination). A running pass is never deleted: the command says to
 * cancel it first. What the passes wrote stays in the destination. Returns the line to print.
 */
export async function forgetMirror(
  client: Client,
  config: Config,
  target: ForgetTarget,
): Promise<string> {
  const into = `connection ${target.connectionId} into ${maskCredentials(target.destination)}`;
  // Whether a pass runs is asked of the workflow itself: the list may not show one just
  // started. Only the newest run of a workflow id can be open.
  const latest = await describeWorkflow(client, target.workflowId);
  if (latest?.status.name === 'RUNNING') {
    throw new UserError(
      `the mirror of ${into} is running: 'ebsync sync --cancel' (with the same --connection and --to) stops it, then --forget forgets it; nothing was deleted`,
    );
  }
  const ledger = await forgetInLedger(config, target);
  const freed = 'so another connection may now mirror into it';
  const ledgerLine =
    ledger.entries > 0
      ? `the ledger forgot the ${counted(ledger.entries, 'record')} it wrote there, ${freed} (the rows stay in the destination; a later pass of ${target.connectionId} into it writes every record again)`
      : ledger.held
        ? `the ledger forgot what it held of it there (no record written), ${freed}`
        : 'the ledger held nothing of it there';
  const still = await stillStartingIt(client, config, target);
  if (latest === null) {
    return ledger.held
      ? `forgot the mirror of ${into} (no pass of it is left in Temporal): ${ledgerLine}${still}`
      : `no mirror of ${into}: nothing to forget${await whoWrites(config, target)}${still}`;
  }
  const runs = [...new Set([latest.runId, ...(await listedRuns(client, target.workflowId))])];
  for (const runId of runs) {
    await client.workflowService.deleteWorkflowExecution({
      namespace: config.temporal.namespace,
      workflowExecution: { workflowId: target.workflowId, runId },
    });
  }
  // The server deletes in the background, durably once asked (about 10 s here beside a test
  // suite, over 30 s once in CI): a short wait covers the quiet case, and the line says which.
  const deadline = Date.now() + SETTLE_MS;
  let gone = false;
  while (!gone && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    gone =
      (await describeWorkflow(client, target.workflowId)) === null &&
      (await listedRuns(client, target.workflowId)).length === 0;
  }
  const passes = runs.length === 1 ? '1 run' : `${runs.length} runs`;
  const done = gone
    ? `${passes} deleted from Temporal, so 'ebsync status' no longer shows it`
    : `Temporal is deleting ${passes} in the background (usually seconds, longer on a busy server), and 'ebsync status' stops showing it once done`;
  return `forgot the mirror of ${into}: ${done}; ${ledgerLine}${still}`;
}

/**
 * What will start the mirror again, said with the forgetting: its schedules and the
 * connection's webhook registration into the same destination. Each would claim the
 * destination again (so another connection is refused once more), or, once another connection
 * writes there, fail every time it fires (a problem of `ebsync status` for good). Before, the
 * demo's default schedules went on firing into the file `npm start` mirrors, unsaid.
 * Returns '' when nothing does, else the text to add to the line.
 */
async function stillStartingIt(
  client: Client,
  config: Config,
  target: ForgetTarget,
): Promise<string> {
  const { views } = await listMirrorSchedules(client, target.connectionId);
  const schedules = views
    .filter((v) => v.mirrorWorkflowId === target.workflowId)
    .map((v) => v.scheduleId);
  let registered: boolean | string = false;
  // Loaded here, with SQLite's driver: `ebsync sync`, which holds this file, loads neither.
  const { registeredConnectionIds } = await import('../store/webhook-registrations.js');
  const { webhookRegistrations, webhookRegistrationsFile } =
    await import('../worker/webhook-registrations-file.js');
  // Read only where the connection has one: forgetting makes no file.
  const file = webhookRegistrationsFile(config);
  if (existsSync(file) && registeredConnectionIds(file).includes(target.connectionId)) {
    const registrations = webhookRegistrations(config);
    try {
      const registration = await registrations.get(target.connectionId);
      registered =
        registration !== undefined &&
        destinationIdentity(registration.destination) === destinationIdentity(target.destination);
    } catch (error) {
      // The forgetting is done; what cannot be told is said, not thrown.
      registered = error instanceof Error ? error.message : String(error);
    } finally {
      registrations.close();
    }
  }
  const ways = [
    ...(schedules.length === 0
      ? []
      : [
          `${schedules.length === 1 ? 'schedule' : 'schedules'} ${schedules.join(', ')} (${schedules.map((id) => `'ebsync schedule delete ${id}'`).join(', ')})`,
        ]),
    ...(registered === true
      ? [
          `its webhook registration (deliveries of ${target.connectionId} still update it: register them again with another --to)`,
        ]
      : typeof registered === 'string'
        ? [
            `perhaps its webhook registration (${target.connectionId} has one, which could not be read here: ${registered})`,
          ]
        : []),
  ];
  if (ways.length === 0) return '';
  return `; still set to write there, and to claim it again or fail each time: ${ways.join(' and ')}`;
}

/**
 * Nothing to forget, often a mistyped --connection or --to (copied from a refusal by hand):
 * who does write that destination, so the person sees the one to name. '' when nobody does.
 */
async function whoWrites(config: Config, target: ForgetTarget): Promise<string> {
  const writers = await withLedger(config, (ledger) =>
    ledger.destinationWriters(ledgerIdOf(config, target.destination)),
  );
  if (writers.length === 0) return ' (no connection writes it)';
  return ` (${writers.length === 1 ? 'connection' : 'connections'} ${writers.join(', ')} ${writers.length === 1 ? 'writes' : 'write'} it)`;
}

/**
 * What the ledger holds of the mirror goes too: its entries, passes and its claim on the
 * destination (Ledger.claimDestination), which is what lets another connection write there.
 * The ledger is opened as the workers open it, from this command's settings.
 */
async function forgetInLedger(
  config: Config,
  target: ForgetTarget,
): Promise<{ entries: number; held: boolean }> {
  const destination = ledgerIdOf(config, target.destination);
  return withLedger(config, (ledger) => ledger.forgetDestination(destination, target.connectionId));
}
