import type { Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { runningSealedElsewhere } from '../worker/workflow-keys.js';
import { UserError } from './errors.js';

/**
 * Refuses, in one line, a Temporal server whose running ebsync workflows (on this task queue)
 * this process's keys cannot open. `ebsync dev` makes a key per data directory, so a second
 * `npm start` from another directory on a server the first one started would otherwise run a
 * worker on the same task queue: it takes the other's tasks, fails every one of them
 * (PayloadDecryptionError, every few seconds), and its own demo cannot connect. Checked before
 * any worker starts. Only a sure decryption failure refuses; an unreadable history does not.
 */
export async function requireOwnKeys(client: Client, config: Config): Promise<void> {
  const workflowId = await runningSealedElsewhere(client, config);
  if (workflowId === undefined) return;
  throw new UserError(
    `the Temporal server at ${config.temporal.address} already runs ebsync workflows on task queue ` +
      `'${config.temporal.taskQueue}' that this data directory's keys cannot open ` +
      `('${workflowId}': another ebsync, with another EBSYNC_DATA_DIR, uses that server); ` +
      'stop that one, run this one from the same data directory, or give it a server of its own ' +
      '(npm start -- --port 7243)',
  );
}
