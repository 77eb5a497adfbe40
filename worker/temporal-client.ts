import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { dataConverter } from './data-converter.js';
import { temporalConnectionOptions } from './temporal-connection.js';

/** Temporal could not be reached: start it or fix TEMPORAL_ADDRESS. */
export class TemporalUnreachableError extends Error {
  override readonly name = 'TemporalUnreachableError';
  readonly retryable = true;
}

/** A Temporal client with ebsync's payload encryption, for the CLI and tools. */
export async function connectClient(
  config: Config,
): Promise<{ client: Client; close: () => Promise<void> }> {
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...temporalConnectionOptions(config),
      connectTimeout: '5s',
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new TemporalUnreachableError(
      `cannot reach Temporal at ${config.temporal.address} (${reason}); start a local one with 'ebsync temporal' or set TEMPORAL_ADDRESS`,
    );
  }
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverter(config),
  });
  return { client, close: () => connection.close() };
}

/**
 * A client that connects on first use and reconnects after Temporal comes back: for servers
 * (the webhook receiver) that must start, and answer 503, while Temporal is away.
 */
export function lazyClient(config: Config): { client: Client; close: () => Promise<void> } {
  const connection = Connection.lazy(temporalConnectionOptions(config));
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverter(config),
  });
  return { client, close: () => connection.close() };
}
