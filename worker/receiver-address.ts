import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { makeDataDir, PRIVATE_FILE_MODE } from '../store/private-files.js';
import { processRuns } from './dev-server-guard.js';

/**
 * Where a running receiver of this data dir listens, for the commands that read its counters.
 * A receiver started with `--port` or `--host` (or on port 0) listens away from the
 * configured address, and `ebsync status` then said "not running" of a receiver that was
 * running, and listed that as a problem. The file is a hint for this machine only: a receiver
 * on another machine is found at the configured address, as before.
 */
const FILE = 'webhook-receiver.json';

const recordSchema = z.object({
  pid: z.number().int().positive(),
  /** The address it listens on, as given (a wildcard address is read as loopback). */
  host: z.string().min(1),
  port: z.number().int().min(1).max(65535),
});

export type ReceiverRecord = z.infer<typeof recordSchema>;

const recordFile = (config: Pick<Config, 'dataDir'>): string => join(config.dataDir, FILE);

/**
 * Records that this process's receiver listens at `host`:`port`; the returned call removes the record
 * again, unless another receiver has written its own since. Failing to write costs only the
 * hint, so it is reported to `onError` and not thrown.
 */
export function recordReceiverAddress(
  config: Pick<Config, 'dataDir'>,
  listening: { host: string; port: number },
  onError: (error: unknown) => void,
): () => void {
  const file = recordFile(config);
  const record: ReceiverRecord = { pid: process.pid, ...listening };
  // A receiver of this data dir already running (another process) is recorded again when
  // this one stops: a second receiver started and stopped beside it took its record with it,
  // and `ebsync status` then called the first one not running.
  const before = recordedReceiver(config);
  const earlier = before && before.pid !== process.pid ? before : undefined;
  try {
    makeDataDir(config.dataDir);
    writeRecord(file, record);
  } catch (error) {
    onError(error);
    return () => undefined;
  }
  return () => {
    // Another receiver's record (another process, or another receiver of this one) stays.
    const now = readRecord(file);
    if (!now || !sameRecord(now, record)) return;
    try {
      if (earlier && processRuns(earlier.pid)) writeRecord(file, earlier);
      else unlinkSync(file);
    } catch {
      // Removed meanwhile: nothing left to remove.
    }
  };
}

const sameRecord = (a: ReceiverRecord, b: ReceiverRecord): boolean =>
  a.pid === b.pid && a.host === b.host && a.port === b.port;

/** Written aside and renamed: a reader never sees half a record. */
function writeRecord(file: string, record: ReceiverRecord): void {
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, `${JSON.stringify(record)}\n`, { mode: PRIVATE_FILE_MODE });
  renameSync(partial, file);
}

function readRecord(file: string): ReceiverRecord | undefined {
  try {
    const parsed = recordSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The http origin of a receiver listening at `host`:`port`. `fromHere` reads a wildcard
 * address as loopback, where this machine reaches it.
 */
export function receiverOrigin(
  { host, port }: { host: string; port: number },
  fromHere = false,
): string {
  const at = !fromHere ? host : host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${at.includes(':') ? `[${at}]` : at}:${port}`;
}

/** The receiver this data dir's record names, if its process still runs; else undefined. */
export function recordedReceiver(config: Pick<Config, 'dataDir'>): ReceiverRecord | undefined {
  const record = readRecord(recordFile(config));
  return record && processRuns(record.pid) ? record : undefined;
}
