import type { Config } from '../config/index.js';

// Errors of the Temporal connection that the CLI reports by their type: this module loads
// nothing of the SDK, so the CLI's failure report can know them at no cost.

/**
 * TEMPORAL_NAMESPACE names no namespace on a server that answers: a setting to fix, not a
 * server to wait for (exit 2, as for any bad setting).
 */
export class TemporalNamespaceMissingError extends Error {
  override readonly name = 'TemporalNamespaceMissingError';
  readonly retryable = false;
  readonly exitCode = 2;
  constructor(config: Config) {
    const { namespace, address } = config.temporal;
    super(
      `TEMPORAL_NAMESPACE '${namespace}' does not exist at ${address}: create it ` +
        `('temporal operator namespace create --namespace ${namespace}') or use the default, 'default'`,
    );
  }
}
