import {
  Runtime,
  makeTelemetryFilterString,
  type Logger as TemporalLogger,
} from '@temporalio/worker';
import { ApplicationFailure, type LogLevel, type LogMetadata } from '@temporalio/common';
import type { Logger } from './logger.js';
import { connectReason } from './temporal-client.js';

const LEVELS: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * A failure as a log line shows it, without stacks: its type, message, whether a retry can
 * help, and the same of its causes.
 */
function failureWithoutStacks(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error) || depth > 8) return error;
  const { type, nonRetryable } = error as { type?: unknown; nonRetryable?: unknown };
  return {
    type: typeof type === 'string' && type !== '' ? type : error.name,
    message: error.message,
    ...(typeof nonRetryable === 'boolean' ? { nonRetryable } : {}),
    ...(error.cause === undefined ? {} : { cause: failureWithoutStacks(error.cause, depth + 1) }),
  };
}

/**
 * A stack belongs in the log only where it points at a bug. Our typed errors reach Temporal as
 * ApplicationFailures made in activities/failures.ts, whose stack only shows that conversion,
 * and a workflow fails only with such failures (any other throw fails its task, not the
 * workflow); an activity's own bug was logged with its stack when the activity failed.
 */
function expectedFailure(message: string, meta: LogMetadata | undefined): boolean {
  const error: unknown = meta?.error;
  if (!(error instanceof Error)) return false;
  return message === 'Workflow failed' || error instanceof ApplicationFailure;
}

/** Where core's warnings of a gRPC call it retries come from. */
const CORE_RETRY_TARGET = 'temporalio_client::retry';

/**
 * How often core's retry warnings are logged. With Temporal away, core warns of each poll it
 * retries (two a second, each with the transport's debug dump): one a minute says the same,
 * with how many were left out.
 */
export const RETRY_WARNING_EVERY_MS = 60_000;

/** Sends the SDK's own log lines (and core's, forwarded) through our redacting pino logger. */
export class PinoTemporalLogger implements TemporalLogger {
  private retryLoggedAt = Number.NEGATIVE_INFINITY;
  private retriesLeftOut = 0;
  /** The last warning left out, said with their count when the minute is up. */
  private lastLeftOut: { message: string; meta: LogMetadata } | undefined;
  private retryFlush: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly retryEveryMs: number = RETRY_WARNING_EVERY_MS,
  ) {}

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (level === 'WARN' && meta?.target === CORE_RETRY_TARGET) {
      this.retryWarning(message, meta);
      return;
    }
    const fields =
      meta && expectedFailure(message, meta)
        ? { ...meta, error: failureWithoutStacks(meta.error) }
        : (meta ?? {});
    this.logger[LEVELS[level]](fields, message);
  }

  /**
   * The first of a run of retry warnings, then one a minute at most, the transport's reason
   * only. Those left out are said, counted, when their minute is up, however the run ended: an
   * outage within a minute of the last line is never left unsaid.
   */
  private retryWarning(message: string, meta: LogMetadata): void {
    const since = Date.now() - this.retryLoggedAt;
    if (since >= this.retryEveryMs) {
      this.logRetry(message, meta);
      return;
    }
    this.retriesLeftOut += 1;
    this.lastLeftOut = { message, meta };
    this.retryFlush ??= setTimeout(() => {
      this.retryFlush = undefined;
      const last = this.lastLeftOut;
      if (last === undefined) return;
      // The line is the last of them: the others are its count.
      this.retriesLeftOut -= 1;
      this.logRetry(last.message, last.meta);
    }, this.retryEveryMs - since);
    // A worker stopping does not wait for a count.
    this.retryFlush.unref();
  }

  private logRetry(message: string, meta: LogMetadata): void {
    const leftOut = this.retriesLeftOut;
    this.retryLoggedAt = Date.now();
    this.retriesLeftOut = 0;
    this.lastLeftOut = undefined;
    this.logger.warn(
      {
        ...meta,
        error: connectReason(meta.error),
        ...(leftOut > 0 ? { leftOut } : {}),
        repeats: `logged once a minute at most`,
      },
      message,
    );
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

let installed = false;

/**
 * Installs the Temporal runtime once per process. The SDK handles SIGINT/SIGTERM by asking
 * every worker to shut down, which lets running activities finish within shutdownGraceTime.
 */
export function installRuntime(logger: Logger): void {
  if (installed) return;
  Runtime.install({
    logger: new PinoTemporalLogger(logger),
    shutdownSignals: ['SIGINT', 'SIGTERM'],
    telemetryOptions: {
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN' }) },
    },
  });
  installed = true;
}

/**
 * Ends the runtime after a start-up that failed. Installed, it keeps the process alive (it
 * polls the core's logs) and holds SIGINT/SIGTERM for workers that will never exist.
 */
export async function endRuntime(): Promise<void> {
  if (!installed) return;
  installed = false;
  await Runtime.instance().shutdown();
}
