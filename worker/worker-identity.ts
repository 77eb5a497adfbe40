import { createHmac } from 'node:crypto';
import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { EncryptionKey } from './codec.js';

/*
 * Two workers on one task queue with other EBSYNC_ENCRYPTION_KEYS (or, in development, other
 * data directories, each with its generated key) each take the other's workflow tasks and
 * fail every one it cannot open: passes stall, and the only trace is a log line per task. So a
 * worker tells Temporal which keys it holds, as its poller identity, and the worker's start
 * and `ebsync status` compare those of the workers polling the queue.
 *
 * A key is named by its id and 8 hex digits of an HMAC under the key itself: two data
 * directories both call their generated key `dev1`, and no one learns anything of a key from
 * 32 bits of a MAC made with it.
 */

const MARK = ' keys=';
const LABEL = 'ebsync worker key fingerprint';

/** `k2.1a2b3c4d`: a key's id and a fingerprint of its bytes. */
export function keyFingerprint(key: EncryptionKey): string {
  return `${key.id}.${createHmac('sha256', key.key).update(LABEL).digest('hex').slice(0, 8)}`;
}

/** What a worker tells Temporal it is: `ebsync-worker 123@host keys=k2.…,k1.…` (sealing first). */
export function workerIdentity(
  keys: readonly EncryptionKey[],
  pid: number = process.pid,
  host: string = hostname(),
): string {
  return `ebsync-worker ${pid}@${host}${MARK}${keys.map(keyFingerprint).join(',')}`;
}

/** The key fingerprints an identity names (sealing first); undefined for other pollers. */
export function identityKeys(identity: string): string[] | undefined {
  const at = identity.lastIndexOf(MARK);
  if (!identity.startsWith('ebsync-worker ') || at < 0) return undefined;
  const keys = identity.slice(at + MARK.length).split(',');
  return keys.every((k) => /^[A-Za-z0-9_.-]+\.[0-9a-f]{8}$/.test(k)) ? keys : undefined;
}

/** The identity without its keys, as a line names a worker: `ebsync-worker 123@host`. */
export const workerName = (identity: string): string =>
  identity.slice(0, identity.lastIndexOf(MARK));

/** The id of a fingerprint (`k2` of `k2.1a2b3c4d`), as the user named the key. */
const keyId = (fingerprint: string): string => fingerprint.slice(0, fingerprint.lastIndexOf('.'));

/**
 * Why two ebsync workers cannot open each other's payloads (one seals with a key the other
 * lacks), in words; undefined when they can, or when either is not an ebsync worker.
 */
export function keysApart(a: string, b: string): string | undefined {
  const [ka, kb] = [identityKeys(a), identityKeys(b)];
  if (!ka?.[0] || !kb?.[0]) return undefined;
  for (const [sealer, sealing, other, holds] of [
    [a, ka[0], b, kb],
    [b, kb[0], a, ka],
  ] as const) {
    if (!holds.includes(sealing)) {
      const same = holds.find((k) => keyId(k) === keyId(sealing));
      return (
        `${workerName(sealer)} seals with key '${keyId(sealing)}', which ${workerName(other)} ` +
        (same ? `holds with other bytes` : `lacks`)
      );
    }
  }
  return undefined;
}

/**
 * The first pair of pollers whose keys are apart, said in one line with what to do; undefined
 * when every ebsync worker among them can open what the others seal.
 */
export function keysApartLine(
  taskQueue: string,
  identities: readonly string[],
): string | undefined {
  const workers = [...new Set(identities)].filter((i) => identityKeys(i) !== undefined);
  for (let i = 0; i < workers.length; i += 1) {
    for (let j = i + 1; j < workers.length; j += 1) {
      const why = keysApart(workers[i]!, workers[j]!);
      if (why) {
        return (
          `workers on task queue '${taskQueue}' hold different encryption keys (as they polled in the last ${POLLER_FRESH_MS / 60_000} minutes: one restarted with other keys is listed that long): ${why}; each ` +
          `fails the tasks of workflows the other started. Give every worker the same ` +
          `EBSYNC_ENCRYPTION_KEYS (in development: the same EBSYNC_DATA_DIR), or a task queue ` +
          `of its own (TEMPORAL_TASK_QUEUE)`
        );
      }
    }
  }
  return undefined;
}

/**
 * A worker long-polls for about a minute at a time; the server remembers a poller for
 * minutes after it went away. One seen this recently is taken as alive.
 */
export const POLLER_FRESH_MS = 120_000;

/** The identities of the workers that polled the task queue's workflow tasks lately. */
export async function livePollers(
  client: Client,
  namespace: string,
  taskQueue: string,
  now: number = Date.now(),
): Promise<string[]> {
  const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;
  const answer = await client.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return (answer.pollers ?? [])
    .filter((poller) => now - Number(poller.lastAccessTime?.seconds ?? 0) * 1000 < POLLER_FRESH_MS)
    .map((poller) => poller.identity ?? '');
}
